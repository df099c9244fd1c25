"""Guided lessons: the EM lecture told step by step on live runs (pure: no Streamlit here).

A lesson is data: a list of :class:`Step` (title, narration, the formula of the half-step about to run, ONE action,
the chart that shows its effect, and an outcome sentence whose numbers are read off the run after the action).
The run underneath is an ordinary :class:`crowdlab.engines.run.Run` on the models of :mod:`crowdlab.models`, the engine
of
the Step page. The state before step ``i`` is the fold of the actions of steps ``0 .. i-1`` from "no run"
(:func:`prepare`), so jumping anywhere in a lesson is deterministic and the narration always matches the run.

Actions (:func:`apply`):

``start:<setup>``            a new run of a named :data:`SETUPS` entry (dataset, model, start), at its snapshot 0
``e_step`` / ``m_step``      one half-step
``step``                     one EM iteration (E then M)
``run``                      EM to convergence
``reset``                    back to the run's initialisation (every step forgotten)
``restart_from:<init>[:s]``  a new run on the same data and model from another start (seed ``s``), to convergence
``switch_model:<name>[:i]``  a new run on the same data with another model (``hard``, ``soft``, ``hmm``, ``mrf``,
                             ``ds``, ``one_coin``, ``mace``, ``ibcc``, ``ebcc``, or ``ds_gold``: Dawid-Skene with
                             :data:`GOLD_REVEAL` of the gold classes revealed and held fixed in every E-step), from
                             start ``i`` (default: the run's own start), at snapshot 0

Six lessons (:data:`LESSONS`), narration written for crowdlab from the EM lecture on bad annotators, Traganitis &
Giannakis (Dawid-Skene eqs. (9)-(11), sequences, networks), Donmez, Lebanon & Balasubramanian (2010), and on
spammers Hovy et al. (2013, MACE) and Kim & Ghahramani (2012, IBCC), on copying Li, Rubinstein & Cohn (2019,
EBCC), and on whether the model is right held-out labels and posterior predictive checks (Gelman, Meng & Stern
1996; :mod:`crowdlab.analysis.fit_check`). Every
claim a narration makes about a run is checked by ``tests/unit/test_lessons.py`` on the very runs built here.
Outcome templates read ``{b[...]}`` (facts before the action), ``{a[...]}`` (after), ``{d[...]}`` (how a fact
moved from before to after, :func:`changes`) and ``{r[...]}`` (reference facts of the lesson, :func:`reference`);
see :func:`facts` for the names.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from crowdlab.engines.run import Run
from crowdlab.errors import ModelError
from crowdlab.io import safe
from crowdlab.io.annotations import Annotations
from crowdlab.io.metrics import accuracy, pearson
from crowdlab.models import EBCC, IBCC, MACE, DawidSkene, GoodBadScores, HMMCrowd, NetworkCrowd, OneCoin

__all__ = [
    "ACTIONS",
    "GOLD_REVEAL",
    "LESSONS",
    "MAJORITY_ROW",
    "SETUPS",
    "Lesson",
    "Setup",
    "Step",
    "applicable",
    "apply",
    "build",
    "changes",
    "facts",
    "fill",
    "majority_start",
    "prepare",
    "reference",
    "short_title",
    "copy_crowd",
    "judges",
    "spam_crowd",
    "worker_types",
]

ACTIONS = ("start", "e_step", "m_step", "step", "run", "reset", "restart_from", "switch_model")


# ---------------------------------------------------------------------------- datasets (cached: pure and seeded)
LECTURE_SEED = 0  # the lecture's crowd: 20 images, 3 good and 2 bad scorers; the everyone-good start works
TRAP_SEED = 3  # the same recipe where the everyone-good start stays at "everyone is good" (a worse optimum)
TRAP_RESTART_SEED = 1  # a random start that finds the two bad scorers on the TRAP_SEED crowd
MIRROR_SEED = 1  # a random start that lands on the label-swapped mirror optimum on bluebirds
RISK_N, RISK_THETA, RISK_START, RISK_SEED = 500, 0.8, 0.6, 2  # one classifier's outputs (Donmez et al. 2010)
SPAM_SEED = 0  # the sparse crowd with many spammers (lesson 4)
GOLD_REVEAL, GOLD_SEED = 0.1, 0  # the share of the gold classes revealed to semi-supervised Dawid-Skene, its draw
COPY_SEED, COPY_RHO = 0, 0.7  # lesson 5's crowd: 4 honest workers and a clique of 5 careless copiers
# EBCC's random split of the start over its subtypes (``seed``): the ELBO has local optima on lesson 5's crowd
# (accuracy 0.54-0.92 over seeds 0-19); seed 1 ends at the highest ELBO of those 20 starts (tested)
COPY_EBCC_SEED = 1
JUDGES_FOLDER = "mohammadi2026_trajectory_judges"  # lesson 5's real panel of LLM judges (sample_data/)
SHARED_SEED = 0  # lesson 6's crowd: a shared error on 40 % of the class-0 items (simulate_shared_error)
FIT_METHODS = ("ds", "one_coin", "ebcc")  # the models lesson 6's fit check compares
CHECK_WORDS = {
    "unanimous": "share of items whose labels all agree",
    "item agreement": "agreement within items",
    "pair agreement spread": "spread of the worker pairs' agreement",
}


@lru_cache(maxsize=4)
def lecture_scores(seed: int):
    """The lecture's crowd: 20 images scored in [0, 1] by 3 good annotators (N(mu_i, 0.1)) and 2 bad (uniform)."""
    from crowdlab.teaching.simulate import simulate_scores

    return simulate_scores(20, 3, 2, sigma=0.1, seed=seed)


@lru_cache(maxsize=1)
def bluebirds() -> Annotations:
    from crowdlab.io.samples import load_sample

    return load_sample("bluebirds")


@lru_cache(maxsize=1)
def sentences():
    """60 label sequences of length 30 (3 classes, a sticky chain: stay with probability 0.9), 5 workers of whom
    3 are novices (a little better than chance) and 2 experts."""
    from crowdlab.teaching.simulate import simulate_sequences

    return simulate_sequences(60, 30, 3, 5, self_transition=0.9, mix={"novice": 0.6, "expert": 0.4}, seed=0)


@lru_cache(maxsize=1)
def network():
    """300 nodes in 3 communities (stochastic block model, average degree 6), the same kind of 5-worker crowd."""
    from crowdlab.teaching.simulate import simulate_sbm

    return simulate_sbm(300, 3, 5, avg_degree=6.0, ratio=0.05, mix={"novice": 0.6, "expert": 0.4}, seed=0)


@lru_cache(maxsize=4)
def classifier_outputs(p: float) -> Annotations:
    """One classifier's outputs on RISK_N unlabelled examples (symmetric noise, accuracy RISK_THETA), with
    p(y = class 1) = ``p`` (class 1 is code 0, as in :mod:`crowdlab.analysis.risk`); the true classes kept as gold."""
    from crowdlab.analysis.risk import simulate_classifier_outputs

    out, y = simulate_classifier_outputs(RISK_N, [RISK_THETA], p, seed=RISK_SEED)
    n = out.shape[0]
    return Annotations(
        item=np.arange(n, dtype=np.int32),
        worker=np.zeros(n, dtype=np.int32),
        label=out[:, 0].astype(np.int32),
        item_names=tuple(str(i) for i in range(n)),
        worker_names=("f",),
        class_names=("1", "2"),
        gold=y.astype(np.int32),
        name=f"one classifier, p(y = 1) = {p:g}",
        notes=(f"simulate_classifier_outputs(n={RISK_N}, theta={RISK_THETA}, p={p}, seed={RISK_SEED})",),
    )


@lru_cache(maxsize=1)
def spam_crowd():
    """A sparse crowd full of spammers: 200 items, 3 classes, 40 workers (30% experts, 20% novices, 50%
    spammers), every item labelled by only 4 of them (about 20 labels per worker)."""
    from crowdlab.teaching.simulate import simulate_crowd

    mix = {"expert": 0.3, "novice": 0.2, "spammer": 0.5}
    return simulate_crowd(200, 40, 3, labels_per_item=4, mix=mix, seed=SPAM_SEED)


@lru_cache(maxsize=1)
def copy_crowd():
    """300 items, 3 classes, every item labelled by 4 honest workers (accuracy 0.7-0.8) and a clique of 5 careless
    workers (accuracy 0.45-0.55 alone) who copy one shared noisy label with probability COPY_RHO."""
    from crowdlab.teaching.simulate import simulate_correlated

    return simulate_correlated(
        300, 4, (5,), 3, rho=COPY_RHO, accuracy=(0.7, 0.8), clique_accuracy=(0.45, 0.55), seed=COPY_SEED
    )


@lru_cache(maxsize=1)
def copy_one_vote() -> Annotations:
    """:func:`copy_crowd` with the clique cut down to one vote: only its first member's labels kept."""
    crowd = copy_crowd()
    d = crowd.annotations
    first = int(np.flatnonzero(crowd.clique >= 0)[0])
    keep = (crowd.clique[d.worker] < 0) | (d.worker == first)
    return Annotations(
        d.item[keep], d.worker[keep], d.label[keep], d.item_names, d.worker_names, d.class_names, gold=d.gold,
        name="the copiers' crowd, the clique as one vote",
    )  # fmt: skip


@lru_cache(maxsize=1)
def shared_crowd():
    """Lesson 6's crowd (:func:`crowdlab.teaching.simulate.simulate_shared_error`): 600 items, 20 workers, 10 labels
    an item, 22 % class 1; on 40 % of the class-0 items every worker says 1 with probability 0.45."""
    from crowdlab.teaching.simulate import simulate_shared_error

    return simulate_shared_error(seed=SHARED_SEED)


@lru_cache(maxsize=1)
def judges() -> Annotations:
    """The panel of five LLM judges on 400 agent trajectories (Mohammadi 2026; sample_data/, gold by construction)."""
    from crowdlab.io.data import read_annotations
    from crowdlab.io.samples import sample_root

    folder = sample_root() / JUDGES_FOLDER
    # the lesson is about the judges' labels (their confidences are soft votes elsewhere: sample "judges")
    return read_annotations(folder / "labels.csv", gold=folder / "gold.csv", soft=False)


def cliques(data: Annotations) -> np.ndarray | None:
    """(M,) the simulation's clique of each worker (-1: labels alone) behind ``data``, or None when not known."""
    if data is copy_crowd().annotations:
        return copy_crowd().clique
    if data is copy_one_vote():
        return copy_crowd().clique
    return None


def worker_types(data: Annotations) -> tuple[str, ...] | None:
    """The simulation's true worker types behind ``data`` (the spam crowd's), or None when they are not known."""
    crowd = spam_crowd()
    return crowd.worker_types if data is crowd.annotations else None


MAJORITY_ROW = "soft majority vote"  # the name of majority_start's row in the sequence strip (the run's start)


def majority_start(data: Annotations) -> np.ndarray:
    """(N,) the labels of EM's majority start (a run's snapshot 0): each item's soft majority vote (its share of the
    votes per class) and the class with the largest share, a tie going to the lowest class code. Not the hard
    majority vote of :func:`crowdlab.models.majority.majority_labels`, whose tie rule may pick another tied class."""
    from crowdlab.models.base import row_argmax
    from crowdlab.models.majority import vote_fractions

    return row_argmax(vote_fractions(data)).astype(np.int32)


@lru_cache(maxsize=1)
def showcase_sequence() -> tuple[int, int]:
    """(first, stop) item indices of the sentence where the majority start (:func:`majority_start`) errs most: the
    one to draw."""
    data = sentences().annotations
    starts = data.sequence_starts
    wrong = (majority_start(data) != data.gold).astype(np.int64)
    s = int(np.argmax(np.add.reduceat(wrong, starts[:-1])))
    return int(starts[s]), int(starts[s + 1])


@lru_cache(maxsize=1)
def network_layout() -> tuple[np.ndarray, np.ndarray]:
    """Drawing positions (n, 2) and the undirected edges (E, 2) of :func:`network`."""
    import scipy.sparse as sp

    from crowdlab.io.graph import spectral_positions

    A = network().adjacency
    C = sp.triu(A, k=1).tocoo()
    return spectral_positions(A.tocsr(), seed=0), np.stack([C.row, C.col], axis=1)


# ---------------------------------------------------------------------------- setups: data + model + start
@dataclass(frozen=True)
class Setup:
    """What ``start:<key>`` builds: a dataset, a model and a start."""

    title: str
    data: Callable[[], Annotations]
    model: Callable[[], object]
    init: str = "majority"
    seed: int = 0
    init_kwargs: Callable[[], dict] = field(default=dict)


def _risk_start(p: float) -> dict:
    return {"params": OneCoin(class_prior=[p, 1 - p]).params_from(np.array([p, 1 - p]), np.array([RISK_START]))}


def _scores_model() -> GoodBadScores:
    return GoodBadScores(score_range=(0.0, 1.0))  # the lecture's score range: the uniform's density is 1


SETUPS: dict[str, Setup] = {
    "scores": Setup("The lecture's crowd", lambda: lecture_scores(LECTURE_SEED).annotations, _scores_model, "all_good"),
    "scores_trap": Setup(
        "A harder crowd, same recipe", lambda: lecture_scores(TRAP_SEED).annotations, _scores_model, "all_good"
    ),
    "bluebirds": Setup("Bluebirds, Dawid-Skene", bluebirds, DawidSkene, "majority"),
    "spammers": Setup("A sparse crowd with many spammers, Dawid-Skene", lambda: spam_crowd().annotations, DawidSkene),
    "sentences": Setup("Label sequences, i.i.d. Dawid-Skene", lambda: sentences().annotations, DawidSkene),
    "network": Setup("A network, i.i.d. Dawid-Skene", lambda: network().annotations, DawidSkene),
    "copiers": Setup("Copiers outvote an honest minority, Dawid-Skene", lambda: copy_crowd().annotations, DawidSkene),
    "copiers_one_vote": Setup("The clique as one vote, Dawid-Skene", copy_one_vote, DawidSkene),
    "judges": Setup("Five LLM judges, Dawid-Skene", judges, DawidSkene),
    "shared": Setup("A crowd with a shared error, Dawid-Skene", lambda: shared_crowd().annotations, DawidSkene),
    "risk_skewed": Setup(
        "One classifier, p(y = 1) = 0.75",
        lambda: classifier_outputs(0.75),
        lambda: OneCoin(class_prior=[0.75, 0.25]),
        "params",
        init_kwargs=lambda: _risk_start(0.75),
    ),
    "risk_uniform": Setup(
        "One classifier, p(y = 1) = 0.5",
        lambda: classifier_outputs(0.5),
        lambda: OneCoin(class_prior=[0.5, 0.5]),
        "params",
        init_kwargs=lambda: _risk_start(0.5),
    ),
    "risk_weak": Setup(
        "One classifier, p(y = 1) = 0.55",
        lambda: classifier_outputs(0.55),
        lambda: OneCoin(class_prior=[0.55, 0.45]),
        "params",
        init_kwargs=lambda: _risk_start(0.55),
    ),
}


def build(key: str) -> Run:
    """A fresh run of setup ``key`` at its snapshot 0 (every posterior kept: the page scrubs through them)."""
    s = SETUPS[key]
    return Run(s.data(), s.model(), s.init, seed=s.seed, **s.init_kwargs())


# ---------------------------------------------------------------------------- actions
def _variant(model, name: str):
    """The model of ``switch_model:<name>``: the same model under hard/soft EM, or the dependent-data model."""
    if name in ("hard", "soft"):
        m = copy.copy(model)
        m.__dict__.pop("_lj_memo", None)
        m.hard = name == "hard"
        return m
    if name == "hmm":
        return HMMCrowd()
    if name == "mrf":
        return NetworkCrowd()  # Potts penalty delta = M (the number of workers), ICM E-step (Alg. 3)
    if name == "ds":
        return DawidSkene()
    if name == "mace":
        return MACE()  # Beta(2, 2) on each competence, Dirichlet(2) on each spam strategy (MAP)
    if name == "ibcc":
        return IBCC()  # Dirichlet(1, ..., 1) + 1 on the diagonal for every confusion column (variational Bayes)
    if name == "one_coin":
        return OneCoin()  # one accuracy per worker, errors spread evenly over the other classes
    if name == "ds_gold":
        return DawidSkene().with_known(None, GOLD_REVEAL, GOLD_SEED)
    if name == "ebcc":
        # the paper's defaults: 10 subtypes, Dirichlet(1) + 3 on the diagonal (variational Bayes)
        return EBCC(seed=COPY_EBCC_SEED)
    raise ValueError(f"unknown model variant {name!r}")


def applicable(run: Run | None, action: str) -> bool:
    """Whether ``action`` can be done on ``run`` now (e.g. ``m_step`` needs an E-step just before)."""
    verb = action.split(":", 1)[0]
    if verb not in ACTIONS:
        raise ValueError(f"unknown lesson action {action!r}")
    if verb == "start":
        return True
    if run is None:
        return False
    if verb == "e_step":
        return run.next_kind == "E"
    if verb == "m_step":
        return run.next_kind == "M"
    if verb in ("step", "run"):
        return run.iterative and not (verb == "run" and run.converged and run.at_end)
    if verb == "reset":
        return len(run.snapshots) > 1
    return True


def apply(run: Run | None, action: str) -> Run:
    """Do ``action`` (see the module docstring); returns the run afterwards (a new object for start, restart_from
    and switch_model, the same one moved forward otherwise). Raises ValueError when it does not apply."""
    if not applicable(run, action):
        raise ValueError(f"{action!r} does not apply to the run now")
    verb, _, arg = action.partition(":")
    if verb == "start":
        return build(arg)
    if verb == "e_step":
        run.e_step()
    elif verb == "m_step":
        run.m_step()
    elif verb == "step":
        run.step()
    elif verb == "run":
        run.run()
    elif verb == "reset":
        run.reset()
    elif verb == "restart_from":
        init, _, seed = arg.partition(":")
        model = _variant(run.model, "hard" if run.model.hard else "soft")
        new = Run(run.data, model, init, seed=int(seed) if seed else 0)
        new.run()
        return new
    elif verb == "switch_model":
        name, _, init = arg.partition(":")
        if init:
            return Run(run.data, _variant(run.model, name), init, seed=0)
        return Run(run.data, _variant(run.model, name), run.init, seed=run.seed, **run.init_kwargs)
    return run


def prepare(lesson: Lesson, i: int) -> Run | None:
    """The run before step ``i``'s action: every earlier step's action done in order, from no run at all."""
    run = None
    for step in lesson.steps[:i]:
        run = apply(run, step.action)
    return run


# ---------------------------------------------------------------------------- facts read off a run
def _names(names, idx) -> str:
    """Worker names for a Markdown sentence (escaped: names are text, never markup)."""
    out = [safe.md(names[i]) for i in idx]
    return ", ".join(out) if out else "nobody"


def facts(run: Run | None) -> dict:
    """Numbers a narration may quote about ``run`` at its cursor (empty when there is no run).

    Always: ``objective``, ``objective0`` (at the start), ``index``, ``kind``, ``iteration``, ``start``,
    ``hard``, ``loglik`` (log p(x | theta) at the current parameters, also for hard EM; NaN for the MRF).
    With class gold: ``accuracy``, ``wrong``, ``n_items``. Class models: ``acc_min`` / ``acc_max`` (worker
    accuracies), ``err_mean`` (1 - their mean), ``n_extreme`` (workers with a confusion entry at 0 or 1, to
    1e-6). Semi-supervised: ``n_known`` (items whose class is given), ``n_unknown``, ``accuracy_unknown`` (on the
    other items). MACE: ``n_flagged`` (workers with P(spamming) = 1 - theta_j > 1/2); with the true worker types
    (:func:`worker_types`) also ``caught`` (true spammers flagged), ``n_spammers``, ``false_flags`` (other workers
    flagged) and ``flags`` (type -> how many of its workers are flagged). Scores: ``pearson`` (item means vs true
    means), ``sigma``, ``pi_good``, ``good`` / ``bad`` (annotator names with P(good) above / below 1/2), ``n_good``,
    ``w_min``. HMM: ``T_stay`` (mean of diag T). One classifier (one-coin, one worker): ``theta``, ``error`` =
    |theta - truth|.
    """
    if run is None:
        return {}
    snap = run.current
    data, params, model = run.data, snap.params, run.model
    out = {
        "objective": snap.objective,
        "objective0": run.snapshots[0].objective,
        "index": snap.index,
        "kind": snap.kind,
        "iteration": snap.iteration,
        "start": run.start_description,
        "hard": model.hard,
        "n_snapshots": len(run.snapshots),
    }
    try:
        out["loglik"] = float(model.log_likelihood(data, params))
    except ModelError:  # intractable (the MRF prior): no observed log-likelihood to quote
        out["loglik"] = float("nan")
    if data.is_continuous:
        w = snap.q[:, 1]
        good = np.flatnonzero(w > 0.5)
        out |= {
            "pearson": pearson(params.mu, data.gold),
            "sigma": params.sigma,
            "pi_good": params.pi_good,
            "good": _names(data.worker_names, good),
            "bad": _names(data.worker_names, np.flatnonzero(w <= 0.5)),
            "n_good": int(good.size),
            "w_min": float(w.min()),
        }
        return out
    labels = run.labels()
    if data.has_gold:
        out |= {
            "accuracy": accuracy(labels, data.gold),
            "wrong": int((labels != data.gold).sum()),
            "n_items": data.n_items,
        }
    acc = params.worker_accuracy()
    out["pi"] = [float(x) for x in params.pi]  # the class prior (posterior mean for variational Bayes)
    g = params.gamma
    extreme = ((g < 1e-6) | (g > 1.0 - 1e-6)).any(axis=(1, 2))
    out |= {"acc_min": float(acc.min()), "acc_max": float(acc.max()), "err_mean": float(1.0 - acc.mean()),
            "n_extreme": int(extreme.sum())}  # fmt: skip
    if getattr(model, "semi_supervised", False) and data.has_gold:
        unknown = model.known_classes(data) < 0
        acc_unknown = accuracy(labels[unknown], data.gold[unknown])
        out |= {"n_known": int((~unknown).sum()), "n_unknown": int(unknown.sum()), "accuracy_unknown": acc_unknown}
    spam = getattr(params, "spamming", None)
    if spam is not None:
        flagged = spam > 0.5
        out["n_flagged"] = int(flagged.sum())
        types = worker_types(data)
        if types is not None:
            types = np.array(types)
            spammer = types == "spammer"
            out["flags"] = {t: int((flagged & (types == t)).sum()) for t in sorted(set(types.tolist()))}
            out |= {"caught": int((flagged & spammer).sum()), "n_spammers": int(spammer.sum()),
                    "false_flags": int((flagged & ~spammer).sum())}  # fmt: skip
    if data is judges() or cliques(data) is not None:
        known = model.known_classes(data) if getattr(model, "semi_supervised", False) else None
        out |= _copy_facts(data, params, snap.q, acc, known)
    T = getattr(params, "T", None)
    if T is not None:
        out["T_stay"] = float(np.mean(np.diag(T)))
    theta = (getattr(params, "extra", None) or {}).get("theta")
    if theta is not None and theta.size == 1:
        t = float(theta[0])
        out |= {"theta": t, "error_rate": 1.0 - t, "error": abs(t - RISK_THETA)}
    return out


def _copy_facts(data: Annotations, params, q: np.ndarray, acc: np.ndarray, known: np.ndarray | None = None) -> dict:
    """Lesson 5's facts: the dependence check (``n_pairs``, ``n_flagged_pairs``, ``eff``, ``kish``, ``both``,
    ``top_pair``, ``top_kappa``); on the copiers' crowd ``flag_in`` / ``flag_out`` (flagged pairs inside /
    outside the clique, of ``n_clique_pairs`` / ``n_out_pairs``), ``clique_acc`` / ``honest_acc`` (mean estimated
    accuracy of each group); on the judges ``acc`` (each judge's estimated accuracy, by name)."""
    from crowdlab.analysis.dependence import dependence_check

    rep = dependence_check(data, params, q, known=known)
    e = rep.effective
    out = {"n_pairs": rep.n_tested, "n_flagged_pairs": rep.n_flagged}
    if e:
        out |= {"eff": e["eigen"], "kish": e["kish"], "both": e["weighted"]}
    if rep.n_tested:
        i = int(np.lexsort((-rep.kappa, rep.p_value))[0])
        out |= {"top_pair": _names(data.worker_names, [rep.a[i], rep.b[i]]).replace(", ", " and "),
                "top_kappa": float(rep.kappa[i])}  # fmt: skip
    c = cliques(data)
    if c is not None:
        same = (c[rep.a] == c[rep.b]) & (c[rep.a] >= 0)
        out |= {"flag_in": int((rep.flagged & same).sum()), "flag_out": int((rep.flagged & ~same).sum()),
                "n_clique_pairs": int(same.sum()), "n_out_pairs": int((~same).sum())}  # fmt: skip
        present = np.bincount(data.worker, minlength=data.n_workers) > 0
        out["clique_acc"] = float(acc[(c >= 0) & present].mean())
        out["honest_acc"] = float(acc[c < 0].mean())
    else:
        out["acc"] = {name: float(a) for name, a in zip(data.worker_names, acc)}
    return out


@lru_cache(maxsize=4)
def reference(lesson_key: str) -> dict:
    """Facts a lesson quotes that do not come from its live run (the truth behind a simulation, a comparison run)."""
    if lesson_key == "em":
        from crowdlab.models.majority import majority_labels

        lec, trap = lecture_scores(LECTURE_SEED), lecture_scores(TRAP_SEED)
        soft = build("bluebirds")
        soft.run()
        stall = Run(bluebirds(), soft.model, "all_good", param_tol=None)  # the objective test alone
        stall.run()
        full = Run(bluebirds(), soft.model, "all_good")  # what the lesson's restart_from:all_good runs
        full.run()
        names = lec.annotations.worker_names
        return {
            "trap_step": 1 + [s.action for s in EM_LESSON.steps].index("start:scores_trap"),
            "plateau": _plateau(full, stall.current.objective, stall.current.iteration),
            "true_bad": _names(names, np.flatnonzero(~lec.good)),
            "true_good": _names(names, np.flatnonzero(lec.good)),
            "trap_true_bad": _names(trap.annotations.worker_names, np.flatnonzero(~trap.good)),
            "mv_accuracy": accuracy(majority_labels(bluebirds()), bluebirds().gold),
            "soft": facts(soft),
            "stall": facts(stall),
        }
    if lesson_key == "dependent":
        seq, net = sentences(), network()
        ds = build("sentences")  # what the lesson's first two steps do: i.i.d. Dawid-Skene to convergence
        ds.run()
        actions = [s.action for s in DEPENDENT_LESSON.steps]
        return {"T_true": float(np.mean(np.diag(seq.T))), "n_seq": seq.annotations.n_sequences,
                "n_nodes": net.annotations.n_items, "n_edges": int(net.adjacency.nnz // 2), "ds": facts(ds),
                "ds_step": 1 + actions.index("run", actions.index("start:sentences"))}  # fmt: skip
    if lesson_key == "risk":
        from crowdlab.analysis.fisher import fisher_symmetric
        from crowdlab.analysis.risk import symmetric_closed_form

        skewed = build("risk_skewed")
        skewed.run()
        out = {"theta": RISK_THETA, "n": RISK_N, "start": RISK_START, "skewed_error": facts(skewed)["error"]}
        for name, p in (("skewed", 0.75), ("uniform", 0.5), ("weak", 0.55)):
            d = classifier_outputs(p)
            est = symmetric_closed_form(d.label, p)
            out[name] = {
                "p": p,
                "m": est.m,
                "share": est.m / est.n,
                "eq9": est.theta_raw,
                "eq9_error": abs(est.theta_raw - RISK_THETA) if est.theta_raw is not None else float("nan"),
                "sd": float(1.0 / np.sqrt(RISK_N * fisher_symmetric(RISK_THETA, p))) if p != 0.5 else float("inf"),
            }
        return out
    if lesson_key == "trust":
        crowd = spam_crowd()
        d = crowd.annotations
        ds = build("spammers")
        ds.run()
        types = np.array(crowd.worker_types)
        return {
            "n_items": d.n_items,
            "n_workers": d.n_workers,
            "n_classes": d.n_classes,
            "per_item": int(round(d.n_obs / d.n_items)),
            "per_worker": d.n_obs / d.n_workers,
            "n_experts": int((types == "expert").sum()),
            "n_novices": int((types == "novice").sum()),
            "n_spammers": int((types == "spammer").sum()),
            "n_honest": int((types != "spammer").sum()),
            "reveal": GOLD_REVEAL,
            "ds": facts(ds),
        }
    if lesson_key == "copy":
        from crowdlab.analysis.dependence import dependence_check

        crowd, d = copy_crowd(), copy_crowd().annotations
        ds = build("copiers")
        ds.run()
        j = judges()
        hit = j.label == j.gold[j.item]
        true_acc = np.bincount(j.worker, weights=hit, minlength=j.n_workers) / np.bincount(j.worker)
        q = np.eye(j.n_classes)[j.gold]
        gold_rep = dependence_check(j, DawidSkene().m_step(j, q), q, known=np.asarray(j.gold))
        lab = np.full((j.n_items, j.n_workers), -1)
        lab[j.item, j.worker] = j.label
        qwen = [j.worker_names.index(n) for n in ("selfcons3:qwen2.5:14b", "step:qwen2.5:14b")]
        pair = (gold_rep.a == min(qwen)) & (gold_rep.b == max(qwen))
        return {
            "n_items": d.n_items,
            "n_honest": int((crowd.clique < 0).sum()),
            "n_clique": int((crowd.clique >= 0).sum()),
            "rho": crowd.rho,
            "mv_accuracy": accuracy(majority_start(d), crowd.truth),  # the runs' start, as step 1 quotes it
            "ds": facts(ds),
            "n_judges": j.n_workers,
            "n_trajectories": j.n_items,
            "true_acc": {name: float(a) for name, a in zip(j.worker_names, true_acc)},
            "qwen_agree": float((lab[:, qwen[0]] == lab[:, qwen[1]]).mean()),
            "qwen_kappa_gold": float(gold_rep.kappa[pair][0]),
            "gold_flagged": gold_rep.n_flagged,
            "gold_eff": gold_rep.effective["eigen"],
            "gold_both": gold_rep.effective["weighted"],
        }
    if lesson_key == "fit":
        from crowdlab.analysis.fit_check import fit_check

        crowd = shared_crowd()
        d = crowd.annotations
        res = fit_check(d, list(FIT_METHODS), replicates=50, seed=0)
        t = res.table.set_index("key")
        ds_checks = res.checks[res.checks["method"] == DawidSkene.info.title].reset_index(drop=True)
        worst = ds_checks.iloc[int(ds_checks["p"].to_numpy().argmin())]
        return {
            "n_items": d.n_items,
            "n_workers": d.n_workers,
            "per_item": int(round(d.n_obs / d.n_items)),
            "truth_share": float(crowd.truth.mean()),
            "ds_accuracy": float(t.loc["ds", "gold accuracy"]),
            "mv_share": float(res.majority_share["1"]),
            "mv_accuracy": accuracy(majority_start(d), crowd.truth),
            "table": res.table,
            "folds": res.folds,
            "n_scored": res.n_scored,
            "score": {k: float(t.loc[k, "held-out"]) for k in FIT_METHODS},
            "gap": {k: float(t.loc[k, "gap"]) for k in FIT_METHODS},
            "gap_se": {k: float(t.loc[k, "gap se"]) for k in FIT_METHODS},
            "best": str(res.table["method"].iloc[0]),
            "recommended": res.recommended,
            "ds_check": CHECK_WORDS.get(str(worst["statistic"]), str(worst["statistic"])),
            "ds_obs": float(worst["observed"]),
            "ds_lo": float(worst["lo"]),
            "ds_hi": float(worst["hi"]),
            "ds_p": "< 0.01" if float(worst["p"]) < 0.01 else f"= {float(worst['p']):.2f}",
        }
    return {}


def _plateau(run: Run, stall_objective: float, stall_iteration: int) -> dict:
    """The two climbs of a run that pauses on a plateau: ``climb1`` (from the start to where the objective test
    alone stopped, at ``stall_iteration``), ``climb2`` (from there to the end), ``share`` (climb2 over the whole
    rise) and ``flat_to`` (the iteration at which a tenth of climb2 is done: where the curve leaves the plateau)."""
    h = run.history()
    at_m = h["kind"] != "E"  # the objective after every whole iteration (and the start)
    obj, it = h["objective"][at_m], h["iteration"][at_m]
    climb2 = float(obj[-1] - stall_objective)
    late = (it > stall_iteration) & (obj - stall_objective > 0.1 * climb2)
    return {
        "climb1": float(stall_objective - obj[0]),
        "climb2": climb2,
        "share": climb2 / float(obj[-1] - obj[0]),
        "flat_to": int(it[np.argmax(late)]),
    }


def changes(before: dict, after: dict) -> dict:
    """How facts moved from ``before`` to ``after``, as phrases for an outcome (``{d[sigma]}``): "is still **0.151**,
    as at the start" when the change does not show at the quoted precision, else "went from 0.140 to **0.151**
    (+0.011)". Only the facts both sides have."""
    out = {}
    for name, digits in (("sigma", 3), ("pi_good", 2)):
        if name in before and name in after:
            b, a = float(before[name]), float(after[name])
            if abs(a - b) < 0.5 * 10.0**-digits:
                out[name] = f"is still **{a:.{digits}f}**, as at the start"
            else:
                out[name] = f"went from {b:.{digits}f} to **{a:.{digits}f}** ({a - b:+.{digits}f})"
    return out


def fill(template: str, before: dict, after: dict, ref: dict) -> str:
    """A narration or outcome with its numbers: ``{b[...]}``, ``{a[...]}``, ``{d[...]}``, ``{r[...]}`` (see the
    module docstring)."""
    return template.format(b=before, a=after, d=changes(before, after), r=ref)


# ---------------------------------------------------------------------------- the lessons
@dataclass(frozen=True)
class Step:
    """One lesson step: ``narration`` (Markdown, 2-5 sentences) and ``formula`` (LaTeX) say what is about to
    happen; ``button`` names the ``action`` (see :func:`apply`); ``chart`` names the figure that shows its effect;
    ``outcome`` (Markdown) is shown after the action, with the run's numbers filled in (:func:`fill`). A ``\\\\`` in
    ``formula`` breaks the line (the page sets it in a ``gathered`` environment). ``details`` (optional, filled the
    same way) is what a short outcome leaves out: the page puts it behind a fold under the outcome."""

    title: str
    narration: str
    formula: str
    action: str
    button: str
    chart: str
    outcome: str
    details: str = ""


@dataclass(frozen=True)
class Lesson:
    key: str
    title: str
    summary: str
    steps: tuple[Step, ...]


# -- lesson 1: the EM lecture -----------------------------------------------------------------------------
_GOOD_BAD = (
    r"s_{ia} \mid z_a{=}1 \sim \mathcal{N}(\mu_i, \sigma^2), \\ s_{ia} \mid z_a{=}0 \sim \mathrm{Uniform}[0, 1],"
    r" \\ P(z_a{=}1) = \pi"
)
_W = (
    r"w_a = P(z_a{=}1 \mid s, \theta) = \frac{\pi \prod_i \mathcal{N}(s_{ia}; \mu_i, \sigma^2)}"
    r"{\pi \prod_i \mathcal{N}(s_{ia}; \mu_i, \sigma^2) + (1 - \pi) \prod_i 1}"
)
_M_SCORES = (
    r"\mu_i = \frac{\sum_a w_a s_{ia}}{\sum_a w_a}, \\ \sigma^2 = \frac{\sum_{i,a} w_a (s_{ia} - \mu_i)^2}"
    r"{\sum_{i,a} w_a}, \\ \pi = \frac{1}{M} \sum_a w_a"
)
_LL_SCORES = (
    r"\log p(F \mid \theta) = \sum_a \log\Big(\pi \prod_i \mathcal{N}(s_{ia}; \mu_i, \sigma^2)"
    r" + (1 - \pi) \prod_i 1\Big)"
)
_DS = r"\Gamma_m(k', k) = P(f_m(x_n) = k' \mid y_n = k), \\ \pi_k = P(y_n = k)"
_DS_E = r"q_{nk} \propto \pi_k \prod_{m} \prod_{k'} \Gamma_m(k', k)^{\mathcal{I}(f_m(x_n) = k')}"
_DS_M = (
    r"\Gamma_m(k', k) = \frac{\sum_n q_{nk}\, \mathcal{I}(f_m(x_n) = k')}{\sum_{k''} \sum_n q_{nk}\,"
    r" \mathcal{I}(f_m(x_n) = k'')}, \\ \pi_k = \frac{1}{N} \sum_n q_{nk}"
)
_DS_LL = r"\log p(F \mid \theta) = \sum_n \log \sum_k \pi_k \prod_m \Gamma_m(f_m(x_n), k)"
_HARD = r"\hat y_n = \arg\max_k q_{nk}, \\ q_{nk} \leftarrow \mathcal{I}(k = \hat y_n)"

EM_LESSON = Lesson(
    "em",
    "EM from start to end: bad annotators, Dawid-Skene, and what can go wrong",
    "The EM lecture on bad annotators, then Dawid-Skene on a real crowd, then the ways EM can disappoint.",
    (
        Step(
            "Good and bad scorers",
            "Five annotators score the same 20 images between 0 and 1. A good annotator's score scatters around "
            "the image's true mean; a bad one answers at random, uniformly over [0, 1]. Nobody tells us who is "
            "who: whether annotator *a* is good, $z_a$, is the **latent variable**. EM starts by pretending every "
            "annotator is good.",
            _GOOD_BAD,
            "start:scores",
            "Start: assume everyone is good",
            "item_means",
            "Every annotator counts fully, so each estimated mean $\\mu_i$ is the plain average of the five scores "
            "(correlation with the true means: **{a[pearson]:.3f}**); the random scores pull the means toward the "
            "middle. σ = **{a[sigma]:.3f}** is inflated by them. π, the share of good annotators, starts at 0.5, not "
            "at 1: with π = 1 no annotator could ever be judged bad, a fixed point EM would never leave.",
        ),
        Step(
            "E-step: who looks good?",
            "With the current means and σ, ask for every annotator how likely their scores are under the good "
            "model (a Gaussian around each mean) and under the bad one (density 1 everywhere). Bayes' rule turns "
            "the two into $w_a$, the probability that the annotator is good.",
            _W,
            "e_step",
            "E-step",
            "annotators",
            "Annotators judged good now: **{a[good]}**; judged bad: **{a[bad]}** (the smallest $w_a$ is "
            "{a[w_min]:.2g}). The simulation's truth: {r[true_bad]} are the bad ones.",
        ),
        Step(
            "M-step: re-estimate, weighted by w",
            "Now recompute the parameters as if the $w_a$ were known: each mean becomes a weighted average in which "
            "an annotator counts as much as we believe they are good. σ and π follow the same way.",
            _M_SCORES,
            "m_step",
            "M-step",
            "item_means",
            "The correlation of the means with the true means went from **{b[pearson]:.3f}** to "
            "**{a[pearson]:.3f}**; σ fell from {b[sigma]:.3f} to **{a[sigma]:.3f}** and π is now "
            "**{a[pi_good]:.2f}**.",
        ),
        Step(
            "Repeat until nothing moves",
            "EM alternates the two half-steps. Neither ever lowers the log-likelihood of the scores: the E-step "
            "leaves it as it is (the lower bound now touches it), the M-step pushes the bound up and the "
            "log-likelihood with it. The curve climbs and flattens.",
            _LL_SCORES,
            "run",
            "Run to convergence",
            "objective",
            "EM stopped after **{a[iteration]}** iterations; the log-likelihood rose from {a[objective0]:.2f} at "
            "the start to **{a[objective]:.2f}** and never went down. Bad annotators found: **{a[bad]}**; the truth: "
            "{r[true_bad]}.",
        ),
        Step(
            "A real crowd: bluebirds and Dawid-Skene",
            "Now class labels: 39 people said which of two look-alike bird species each of 108 photos shows. "
            "Dawid and Skene give every worker a confusion matrix $\\Gamma_m$: the probability of saying k' when the "
            "truth is k. The latent variable is now each photo's true class. We start from the majority vote.",
            _DS,
            "start:bluebirds",
            "Start from the majority vote",
            "accuracy",
            "Majority vote gets **{a[accuracy]:.3f}** of the photos right ({a[wrong]} wrong). The first "
            "$\\Gamma_m$ are "
            "read off those votes: workers' accuracies range from {a[acc_min]:.2f} to {a[acc_max]:.2f}.",
        ),
        Step(
            "E-step: weigh the votes",
            "Each photo's posterior multiplies the prior of a class by, for every worker, the probability of the "
            "answer they gave if that class were true. A reliable worker's vote now counts more than a careless "
            "one's.",
            _DS_E,
            "e_step",
            "E-step",
            "accuracy",
            "{a[n_items]} photos, {a[wrong]} now wrong: accuracy went from {b[accuracy]:.3f} to **{a[accuracy]:.3f}**.",
        ),
        Step(
            "M-step: count again",
            "Each $\\Gamma_m$ is re-counted from the worker's answers, every photo weighted by its posterior "
            "$q_{{nk}}$. The "
            "class prior is the average posterior.",
            _DS_M,
            "m_step",
            "M-step",
            "confusion",
            "Workers' estimated accuracies now range from **{a[acc_min]:.2f}** to **{a[acc_max]:.2f}** "
            "(before: {b[acc_min]:.2f} to {b[acc_max]:.2f}).",
        ),
        Step(
            "Dawid-Skene to convergence",
            "Run the iterations until the log-likelihood stops rising. Watch the accuracy against the bird experts' "
            "labels: EM never sees them, yet it should beat the plain vote.",
            _DS_LL,
            "run",
            "Run to convergence",
            "accuracy",
            "Converged after **{a[iteration]}** iterations at log-likelihood {a[objective]:.2f}: accuracy "
            "**{a[accuracy]:.3f}**, against {r[mv_accuracy]:.3f} for the majority vote.",
        ),
        Step(
            "Why EM can go wrong (1): a pause that looks like the end",
            "Start the same model from 'everyone is good' (every worker right 80% of the time) and let it run. "
            "The curve climbs by {r[plateau][climb1]:.1f} in {r[stall][iteration]} iterations, lies almost flat "
            "until about iteration {r[plateau][flat_to]}, then rises by only {r[plateau][climb2]:.1f} "
            "({r[plateau][share]:.0%} of the whole rise): easy to miss above, plain in the gap to the best "
            "log-likelihood below. A rule that only asks whether the objective stopped changing would stop on "
            "the plateau.",
            _DS_LL,
            "restart_from:all_good",
            "Restart from 'everyone is good'",
            "objective_gap",
            "EM went on to **{a[objective]:.2f}** at iteration **{a[iteration]}**, accuracy "
            "**{a[accuracy]:.3f}**; the objective alone would have stopped it at iteration {r[stall][iteration]}. "
            "A pause is not an optimum (a worse one: step {r[trap_step]}, on the scorers).",
            details="Had it stopped when the log-likelihood changed by less than 1e-8 (relative), this run would "
            "have ended at iteration {r[stall][iteration]}, log-likelihood {r[stall][objective]:.2f} and accuracy "
            "{r[stall][accuracy]:.3f}: apparently converged, yet the parameters were still drifting. crowdlab also "
            "asks that the parameters settle, so EM went on to the majority start's answer ({b[objective]:.2f}). "
            "Near a plateau (a saddle of the likelihood) each step gains next to nothing.",
        ),
        Step(
            "Why EM can go wrong (2): the mirror image",
            "Nothing in the model says which class is called 'first'. Swap the two class names everywhere, in "
            "every $\\Gamma_m$ and in π, and the likelihood does not change. Start from a random posterior and "
            "see where "
            "EM goes.",
            _DS_LL,
            f"restart_from:random:{MIRROR_SEED}",
            f"Restart from a random start (seed {MIRROR_SEED})",
            "accuracy",
            "Log-likelihood **{a[objective]:.4f}**, the same as the best run's {r[soft][objective]:.4f}, yet "
            "accuracy **{a[accuracy]:.3f}** ({a[wrong]} of {a[n_items]} photos wrong): the classes came out swapped, "
            "so the fitted workers name the other species {a[err_mean]:.0%} of the time on average. The likelihood "
            "alone cannot tell this mirror from the real answer.",
        ),
        Step(
            "Why EM can go wrong (3): hard EM",
            "Hard EM replaces each posterior by its most likely class before the M-step, like k-means. It is "
            "simpler and often faster, but it throws away how sure each item is.",
            _HARD,
            "switch_model:hard:majority",
            "Switch to hard EM (majority start)",
            "objective",
            "A hard-EM run, back at the majority-vote start: its objective is the complete-data log-likelihood "
            "$\\log p(F, \\hat y \\mid \\theta)$ = **{a[objective]:.2f}**.",
        ),
        Step(
            "Hard EM to convergence",
            "Run hard EM until the labels stop changing. Then compare its answer with soft EM from the same start, "
            "on accuracy and on the log-likelihood soft EM maximises.",
            r"\log p(F, \hat y \mid \theta) = \sum_n \log \pi_{\hat y_n} + \sum_n \sum_m \log \Gamma_m(f_m(x_n),"
            r" \hat y_n)",
            "run",
            "Run hard EM to convergence",
            "accuracy",
            "Hard EM stopped after **{a[iteration]}** iterations with accuracy **{a[accuracy]:.3f}**; soft EM "
            "reached {r[soft][accuracy]:.3f}. Measured by the real objective, log p(F | θ), hard EM's parameters "
            "score **{a[loglik]:.2f}** against soft EM's {r[soft][loglik]:.2f}.",
        ),
        Step(
            "Back to the scorers: a harder crowd",
            "The same recipe (3 good, 2 bad scorers, 20 images) with another draw of the random numbers. We start "
            "again from the lecture's 'everyone is good'.",
            _GOOD_BAD,
            "start:scores_trap",
            "Start: assume everyone is good",
            "annotators",
            "Everyone starts with $w_a$ = 1; π = {a[pi_good]:.2f}, σ = {a[sigma]:.3f}.",
        ),
        Step(
            "The everyone-is-good start gets stuck",
            "Run EM to convergence from there. Watch whether any annotator's $w_a$ ever leaves 1.",
            _LL_SCORES,
            "run",
            "Run to convergence",
            "annotators",
            "EM stopped after {a[iteration]} iterations at log-likelihood **{a[objective]:.2f}**, still calling "
            "**{a[n_good]}** annotators good ({a[good]}). In truth {r[trap_true_bad]} are bad, yet σ "
            "{d[sigma]}: inflated by the random scores, it is wide enough that the Gaussians explain even those "
            "better than the uniform does. Nobody is ever found bad; the everyone-good start sits on a local "
            "optimum.",
        ),
        Step(
            "A random start finds the better optimum",
            "Restart from random guesses of $w_a$ and run to convergence. A handful of restarts, keeping the best "
            "log-likelihood, is the usual cure for local optima.",
            _LL_SCORES,
            f"restart_from:random:{TRAP_RESTART_SEED}",
            f"Restart from a random start (seed {TRAP_RESTART_SEED})",
            "annotators",
            "This run reached log-likelihood **{a[objective]:.2f}**, higher than the {b[objective]:.2f} of the "
            "everyone-good start, and it calls **{a[bad]}** bad: exactly the truth ({r[trap_true_bad]}). Keep the "
            "restart with the highest log-likelihood.",
        ),
    ),
)

# -- lesson 2: dependent data ----------------------------------------------------------------------------
DEPENDENT_LESSON = Lesson(
    "dependent",
    "Dependent data: sequences (HMM) and networks (Potts)",
    "Neighbouring items share labels: an HMM for sequences, a Potts prior for graphs (Traganitis & Giannakis).",
    (
        Step(
            "Sequences labelled by a noisy crowd",
            "{r[n_seq]} sequences of 30 tokens, 3 classes; a token usually keeps its neighbour's class. Five "
            "workers label every token, three of them only a little better than chance. First ignore the order: "
            "Dawid-Skene treats every token on its own.",
            _DS,
            "start:sentences",
            "Start Dawid-Skene (majority start)",
            "strip",
            "The run starts from the soft majority vote: each token's share of the votes per class, its largest "
            "share taken as the label (a tie goes to the first class). That start, the strip's row "
            f"'{MAJORITY_ROW}', gets **{{a[accuracy]:.3f}}** of the tokens right.",
        ),
        Step(
            "Dawid-Skene, item by item",
            "Run i.i.d. Dawid-Skene to convergence. It learns who is reliable, but each token is still decided "
            "alone, as if the sentence were shuffled.",
            _DS_E,
            "run",
            "Run to convergence",
            "strip",
            "Dawid-Skene: accuracy **{a[accuracy]:.3f}** after {a[iteration]} iterations (the soft majority vote "
            "it started from: {b[accuracy]:.3f}). Look for isolated flips inside runs of one class: the order "
            "could fix them.",
        ),
        Step(
            "Let the labels form a Markov chain",
            "The HMM-crowd model adds a transition matrix T: the class of token n depends on the class of token "
            "n − 1. The E-step becomes forward-backward, which passes evidence along the sequence both ways.",
            r"P(y_n = k \mid y_{n-1} = k') = T(k, k'), \\ q_{nk} = P(y_n = k \mid F) \text{ by forward-backward}",
            "switch_model:hmm",
            "Switch to HMM-crowd (majority start)",
            "transitions",
            "The start counts T from the soft majority votes of neighbouring tokens, taken as independent: the "
            "chance of staying in a class averages only **{a[T_stay]:.2f}**.",
        ),
        Step(
            "HMM-crowd to convergence",
            "This is Baum-Welch: forward-backward, then re-count $\\Gamma_m$ and T from the expected labels and "
            "transitions. "
            "Every iteration still raises the log-likelihood.",
            r"T(k, k') = \frac{\sum_n \xi_n(k, k')}{\sum_n \sum_{k''} \xi_n(k'', k')}, \\"
            r" \xi_n(k, k') = P(y_n = k, y_{n-1} = k' \mid F)",
            "run",
            "Run to convergence",
            "strip",
            "HMM-crowd: accuracy **{a[accuracy]:.3f}** (Dawid-Skene alone: {r[ds][accuracy]:.3f}, step "
            "{r[ds_step]}); "
            "the learnt chance of staying is **{a[T_stay]:.2f}** (truth: {r[T_true]:.2f}).",
        ),
        Step(
            "A network labelled by the same kind of crowd",
            "{r[n_nodes]} nodes in three communities joined by {r[n_edges]} edges, mostly inside a community. "
            "Again, i.i.d. Dawid-Skene first.",
            _DS,
            "start:network",
            "Start Dawid-Skene (majority start)",
            "network",
            "The soft majority vote (the run's start): accuracy **{a[accuracy]:.3f}** ({a[wrong]} nodes wrong, "
            "ringed).",
        ),
        Step(
            "Dawid-Skene on the network",
            "Run it to convergence, still ignoring the edges. Wrong nodes are ringed in the drawing.",
            _DS_E,
            "run",
            "Run to convergence",
            "network",
            "Dawid-Skene: accuracy **{a[accuracy]:.3f}**, wrong on {a[wrong]} of {a[n_items]} nodes.",
        ),
        Step(
            "The Potts penalty",
            "A Potts prior charges δ for every edge whose two ends get different classes, so a node is pulled "
            "toward its neighbours' labels. The E-step (ICM) gives each node, in turn, the class that best trades "
            "its workers' evidence against the penalty; δ = M, the number of workers.",
            r"P(y) \propto \exp\Big(-\sum_{(n,n') \in E} \delta\, \mathcal{I}(y_n \neq y_{n'})\Big), \\"
            r" \hat y_n = \arg\min_k \Big[\delta \sum_{n' \in \mathcal{N}_n} \mathcal{I}(k \neq \hat y_{n'}) \\"
            r" \qquad - \sum_m \log \Gamma_m(f_m(x_n), k)\Big]",
            "switch_model:mrf",
            "Switch to MRF-crowd (Potts, ICM)",
            "network",
            "An MRF-crowd run at the majority-vote start: wrong on **{a[wrong]}** nodes.",
        ),
        Step(
            "MRF-crowd to convergence",
            "Alternate ICM and the M-step until the labels settle. ICM is greedy, so this EM is approximate: its "
            "objective is the fit at the ICM labels, not the exact log-likelihood.",
            _DS_M,
            "run",
            "Run to convergence",
            "network",
            "MRF-crowd: accuracy **{a[accuracy]:.3f}**, wrong on **{a[wrong]}** of {a[n_items]} nodes; the "
            "edges corrected what the workers alone could not.",
        ),
    ),
)

# -- lesson 3: error rates without labels (Donmez, Lebanon & Balasubramanian 2010) ---------------------------
_SYM = r"p_\theta(\hat y \mid y) = \theta^{\mathcal{I}(\hat y = y)} (1 - \theta)^{\mathcal{I}(\hat y \neq y)}, \\"
_SYM += r" P(\hat y = 2) = p\,(1 - \theta) + (1 - p)\,\theta"
_EQ9 = r"\hat\theta = \frac{p - m/n}{2p - 1} \qquad (m = \#\{\hat y = 2\})"
_FISHER = r"J(\theta) = \frac{(2p - 1)^2}{P_1 P_2}, \\ \mathrm{sd}(\hat\theta) \approx \frac{1}{\sqrt{n J(\theta)}}"

RISK_LESSON = Lesson(
    "risk",
    "Error rates without labels (Donmez, Lebanon & Balasubramanian 2010)",
    "When the class frequencies p(y) are known, a classifier's outputs alone reveal its error rate, unless "
    "p(y) is uniform; the Fisher information says how well.",
    (
        Step(
            "One classifier, no labels",
            "A classifier has labelled {r[n]} examples; we never see the truth, only its outputs. We do know how "
            "common class 1 is: p = 0.75. If the classifier is right with probability θ, the share of outputs "
            "'2' it produces is a straight line in θ, so the observed share pins θ down.",
            _SYM,
            "start:risk_skewed",
            f"Start EM with the guess θ = {RISK_START}",
            "loglik",
            "The classifier said '2' on {r[skewed][m]} of {r[n]} examples ({r[skewed][share]:.3f}). The curve is "
            "the log-likelihood of the outputs as a function of θ; its peak is eq. (9)'s θ = "
            "{r[skewed][eq9]:.3f}.",
        ),
        Step(
            "EM climbs to the closed form",
            "Run EM with p held fixed. The E-step guesses each example's class from the output and θ; the M-step "
            "counts how often the output agreed with that guess.",
            _EQ9,
            "run",
            "Run EM to convergence",
            "loglik",
            "EM's estimate $\\hat\\theta$ = **{a[theta]:.4f}** after {a[iteration]} iterations, the closed form gives "
            "{r[skewed][eq9]:.4f}; the truth is {r[theta]} (off by {a[error]:.3f}). Estimated error rate without "
            "a single label: **{a[error_rate]:.3f}**.",
        ),
        Step(
            "When p(y) is uniform",
            "Now the same classifier on data where both classes are equally common. Whatever θ is, it says '2' "
            "half of the time, so its outputs carry no trace of θ.",
            _SYM,
            "start:risk_uniform",
            f"Start EM with the guess θ = {RISK_START}",
            "loglik",
            "The log-likelihood is flat: every θ explains the {r[uniform][m]} outputs '2' equally well.",
        ),
        Step(
            "EM cannot move",
            "Run EM. The E-step's guess of the class simply echoes θ back, and the M-step returns the θ it was given.",
            _SYM,
            "run",
            "Run EM to convergence",
            "objective",
            "EM stopped at $\\hat\\theta$ = **{a[theta]:.4f}**, exactly its start {r[start]}, after {a[iteration]} "
            "iteration: a start at 0.9 would have stayed at 0.9. Not identifiable: the error rate cannot be "
            "learnt without labels when p(y) is uniform.",
        ),
        Step(
            "Fisher information: how much the outputs tell",
            "Between 'flat' and 'sharp' lies a sliding scale. The Fisher information J measures how curved the "
            "log-likelihood is at the truth; the estimate's spread is about 1/√(nJ). J vanishes as p approaches "
            "1/2. Take p = 0.55, close to uniform.",
            _FISHER,
            "start:risk_weak",
            f"Start EM with the guess θ = {RISK_START} (p = 0.55)",
            "fisher",
            "At p = 0.55 and θ = {r[theta]}, the Fisher information predicts a spread of about "
            "**{r[weak][sd]:.3f}** for $\\hat\\theta$ with n = {r[n]}; at p = 0.75 it was {r[skewed][sd]:.3f}.",
        ),
        Step(
            "The estimate near uniform p",
            "Run EM on these outputs. Then compare its error with the p = 0.75 case.",
            _EQ9,
            "run",
            "Run EM to convergence",
            "fisher",
            "After {a[iteration]} iterations EM is at $\\hat\\theta$ = **{a[theta]:.3f}**, still creeping toward "
            "the maximum, "
            "eq. (9)'s {r[weak][eq9]:.3f}: where the log-likelihood is nearly flat, EM is slow too. Even the "
            "maximum is off by **{r[weak][eq9_error]:.3f}** (truth {r[theta]}), against {r[skewed_error]:.3f} at "
            "p = 0.75 with the same classifier and n. Where J is small (dark contours), unlabelled data say "
            "little.",
        ),
    ),
)

# -- lesson 4: whom to trust (Dawid & Skene 1979, Hovy et al. 2013, Kim & Ghahramani 2012) ----------------------
_MACE = (
    r"\Gamma_j(a, t) = \theta_j\, \mathcal{I}(a = t) + (1 - \theta_j)\, \xi_j(a), \\"
    r" P(\text{worker } j \text{ spams}) = 1 - \theta_j"
)
_MACE_M = (
    r"\theta_j = \frac{\mathbb{E}[\#\text{honest labels of } j] + 1}{\#\text{labels of } j + 2}"
    r" \quad (\text{prior } \theta_j \sim \mathrm{Beta}(2, 2))"
)
_IBCC = (
    r"\Gamma_m(\cdot, k) \sim \mathrm{Dirichlet}(A_{0}(\cdot, k)), \quad A_0(k', k) = 1 + \mathcal{I}(k' = k), \\"
    r" A_m(k', k) = A_0(k', k) + \sum_n q_{nk}\, \mathcal{I}(f_m(x_n) = k')"
)
_ELBO = r"\mathrm{ELBO} = \mathbb{E}_q[\log p(F, y, \kappa, \Gamma)] - \mathbb{E}_q[\log q] \le \log p(F)"
_GOLD = (
    r"q_{nk} = \mathcal{I}(k = y_n) \text{ for the items with known gold } y_n, \\"
    r" q_{nk} \propto \pi_k \prod_m \Gamma_m(f_m(x_n), k) \text{ for the rest}"
)

TRUST_LESSON = Lesson(
    "trust",
    "Whom to trust: spammers, priors and a little gold",
    "A sparse crowd, half of it spammers: Dawid-Skene, MACE's spam coin, IBCC's Dirichlet prior, and what a few "
    "gold labels do.",
    (
        Step(
            "A sparse crowd full of spammers",
            "{r[n_items]} items, {r[n_classes]} classes and {r[n_workers]} workers: {r[n_experts]} experts, "
            "{r[n_novices]} novices and {r[n_spammers]} spammers who answer without looking. Each item gets only "
            "{r[per_item]} labels, so a worker labels about {r[per_worker]:.0f} items. We start Dawid-Skene "
            "(Dawid & Skene 1979) from the majority vote, where every worker counts the same.",
            _DS,
            "start:spammers",
            "Start Dawid-Skene (majority start)",
            "accuracy",
            "The majority vote gets **{a[accuracy]:.3f}** of the items right ({a[wrong]} of {a[n_items]} wrong): "
            "a spammer's vote weighs as much as an expert's.",
        ),
        Step(
            "Dawid-Skene: learn whom to trust",
            "Run EM to convergence. Every worker gets a confusion matrix $\\Gamma_m$, so a worker who answers at "
            "random ends up with flat columns and little say. But $\\Gamma_m$ is counted from about "
            "{r[per_worker]:.0f} labels, a handful per class.",
            _DS_M,
            "run",
            "Run to convergence",
            "confusion",
            "Dawid-Skene: accuracy **{a[accuracy]:.3f}** against {b[accuracy]:.3f} for the majority vote, "
            "after {a[iteration]} iterations (crowdlab's cap: the parameters have not settled). "
            "Yet **{a[n_extreme]}** of the {r[n_workers]} workers have "
            "a confusion matrix with an entry at 0 or 1: from so few labels, maximum likelihood concludes "
            "that a worker never (or always) gives some answer. It overfits.",
        ),
        Step(
            "MACE: a spammer is a coin",
            "MACE (Hovy et al. 2013) explains every label by a coin: with probability $\\theta_j$ worker j gives "
            "the true class, otherwise j spams with a strategy $\\xi_j$ of their own. That is K numbers per worker "
            "instead of Dawid-Skene's K(K − 1), and a Beta(2, 2) prior keeps every $\\theta_j$ off 0 and 1. "
            "Switch the model; same majority start.",
            _MACE,
            "switch_model:mace",
            "Switch to MACE (majority start)",
            "spam",
            "A MACE run at the majority start, before any EM step: judged against the majority vote, "
            "**{a[n_flagged]}** of the {r[n_workers]} workers look like spammers (P(spamming) > 0.5).",
        ),
        Step(
            "MACE to convergence: who is spamming?",
            "Run EM. The E-step weighs every label by how likely its worker was honest; the M-step re-counts "
            "$\\theta_j$ with the prior's two pseudo-labels. The chart groups the workers by their true type, "
            "which MACE never sees.",
            _MACE_M,
            "run",
            "Run to convergence",
            "spam",
            "MACE: accuracy **{a[accuracy]:.3f}**, above Dawid-Skene's {r[ds][accuracy]:.3f}. It flags "
            "**{a[caught]} of the {a[n_spammers]}** true spammers with P(spamming) > 0.5, "
            "**{a[flags][novice]}** of the {r[n_novices]} novices and **{a[flags][expert]}** of the "
            "{r[n_experts]} experts: a novice, right only a little more often than chance, looks to MACE like a "
            "part-time spammer.",
        ),
        Step(
            "IBCC: a prior on every confusion column",
            "Kim & Ghahramani (2012) keep Dawid-Skene's full confusion matrices but put a Dirichlet prior on "
            "every column: a pseudo-count in every cell, one more on the diagonal. Variational Bayes takes EM's "
            "place; its objective is the ELBO, a lower bound on the evidence log p(F).",
            _IBCC,
            "switch_model:ibcc",
            "Switch to IBCC (majority start)",
            "objective",
            "An IBCC run at the majority start: ELBO **{a[objective]:.2f}**.",
        ),
        Step(
            "IBCC to convergence",
            "Run variational Bayes. Each half-step maximises the ELBO over one factor with the other fixed, so "
            "the curve never goes down.",
            _ELBO,
            "run",
            "Run to convergence",
            "objective",
            "The ELBO rose from {a[objective0]:.2f} to **{a[objective]:.2f}** in {a[iteration]} iterations. "
            "Accuracy **{a[accuracy]:.3f}**, above Dawid-Skene's {r[ds][accuracy]:.3f}; workers with a confusion "
            "entry at 0 or 1: **{a[n_extreme]}** (Dawid-Skene: {r[ds][n_extreme]}).",
        ),
        Step(
            "A little gold",
            "Often an expert has checked a few items. Reveal the true class of {r[reveal]:.0%} of the items to "
            "Dawid-Skene: semi-supervised EM holds them fixed in every E-step, so the confusion matrices are "
            "counted partly on labels whose truth is certain.",
            _GOLD,
            "switch_model:ds_gold",
            f"Reveal {GOLD_REVEAL:.0%} of the gold to Dawid-Skene",
            "accuracy",
            "**{a[n_known]}** items are known. The start is the majority vote with the known items set to their "
            "class: accuracy **{a[accuracy]:.3f}**.",
        ),
        Step(
            "Semi-supervised Dawid-Skene to convergence",
            "Run EM. The known items stay fixed; the others are inferred as before.",
            _GOLD,
            "run",
            "Run to convergence",
            "accuracy",
            "Accuracy **{a[accuracy]:.3f}** on all {a[n_items]} items, against {r[ds][accuracy]:.3f} for "
            "Dawid-Skene without gold; on the {a[n_unknown]} items whose class was not given it is "
            "**{a[accuracy_unknown]:.3f}**. A little gold helped on the rest too.",
        ),
    ),
)


# -- lesson 5: when annotators copy each other (Li, Rubinstein & Cohn 2019) --------------------------------------
_CI = r"P(f_a(x_n), f_b(x_n) \mid y_n) = P(f_a(x_n) \mid y_n)\, P(f_b(x_n) \mid y_n)"
_CHECK = (
    r"E_{ab} = \sum_n \sum_k w_{nk} \sum_{k'} \Gamma_a(k', k)\, \Gamma_b(k', k), \\"
    r" w_n \propto q_n / \big(p(f_a(x_n) \mid \cdot)\, p(f_b(x_n) \mid \cdot)\big), \\"
    r" p = P(\#\text{agree} \ge O_{ab}), \quad \kappa_{ab} = \frac{O_{ab} - E_{ab}}{S_{ab} - E_{ab}}"
)
_EBCC = (
    r"g_n \mid y_n = k \sim \phi_k \ (\text{subtype}), \\"
    r" f_m(x_n) \mid y_n = k, g_n = l \sim V_{ml}(\cdot, k), \\"
    r" r_{nlk} \propto \exp\big(E\log\kappa_k + E\log\phi_k(l) + \sum_m E\log V_{ml}(f_m(x_n), k)\big)"
)
_EFF = (
    r"M_{\mathrm{eff}} = \frac{(\sum_i \lambda_i)^2}{\sum_i \lambda_i^2} \ (\lambda: \text{eigenvalues of } R), \\"
    r" \text{Kish: } \frac{(\sum_m w_m)^2}{\sum_m w_m^2}, \quad \text{both: } \frac{(\sum_m w_m)^2}{w^\top R w}"
)

COPY_LESSON = Lesson(
    "copy",
    "When annotators copy each other: cliques and a panel of LLM judges",
    "A clique of careless copiers outvotes an honest minority; Dawid-Skene takes agreement for accuracy, a check "
    "of every pair and EBCC (Li, Rubinstein & Cohn 2019) see it; then five real LLM judges.",
    (
        Step(
            "A clique that votes as one",
            "{r[n_items]} items, 3 classes. {r[n_honest]} honest workers label each item on their own, right 70-80% "
            "of the time. {r[n_clique]} careless workers, barely better than chance alone, copy one shared noisy "
            "answer with probability {r[rho]:.0%}: five votes that are nearly one. We start Dawid-Skene from the "
            "majority vote.",
            _CI,
            "start:copiers",
            "Start Dawid-Skene (majority start)",
            "accuracy",
            "The majority vote gets **{a[accuracy]:.3f}** of the items right: where the clique agrees, its five "
            "votes beat the four honest ones.",
        ),
        Step(
            "Dawid-Skene mistakes agreement for accuracy",
            "Run Dawid-Skene to convergence. It assumes the workers err independently given the truth, so workers "
            "who agree with each other look right. Then compare every pair's agreements with what the fitted model "
            "predicts if they were independent.",
            _CHECK,
            "run",
            "Run to convergence and check every pair",
            "dependence",
            "Dawid-Skene: accuracy **{a[accuracy]:.3f}**, below the majority vote's {b[accuracy]:.3f}. It rates the "
            "copiers **{a[clique_acc]:.2f}** accurate and the honest workers **{a[honest_acc]:.2f}**: the clique "
            "became its truth, and the check flags **{a[flag_out]}** pairs outside it, {a[flag_in]} inside.",
            details="Measured against the clique, the honest workers agree with each other more than their low "
            "fitted accuracy allows, so the check flags their pairs and not the copiers'. A check is only as good "
            "as the model it leans on.",
        ),
        Step(
            "EBCC: a shared subtype explains the agreement",
            "EBCC (Li, Rubinstein & Cohn 2019) gives each item a latent subtype within its class, shared by its "
            "workers, and each worker a confusion matrix per subtype. Items where the clique copies a wrong answer "
            "can form their own subtype. Variational Bayes from the majority start, split at random over the "
            "subtypes (of 20 splits, the one with the highest ELBO).",
            _EBCC,
            "switch_model:ebcc",
            "Switch to EBCC (majority start)",
            "objective",
            "An EBCC run at the majority start: ELBO **{a[objective]:.2f}**.",
        ),
        Step(
            "EBCC to convergence, and the check again",
            "Run variational Bayes; the ELBO never goes down. Then the same pairwise check, now against EBCC's "
            "fitted truth and its subtype-averaged confusion matrices.",
            _ELBO,
            "run",
            "Run to convergence",
            "dependence",
            "EBCC: accuracy **{a[accuracy]:.3f}**, against Dawid-Skene's {r[ds][accuracy]:.3f} and the majority "
            "vote's {r[mv_accuracy]:.3f}. The check now flags **{a[flag_in]} of the {a[n_clique_pairs]}** pairs "
            "inside the clique and {a[flag_out]} of the {a[n_out_pairs]} outside it: the clique found.",
        ),
        Step(
            "Or count the clique once",
            "When you know a clique, the simplest cure is to keep one of its votes. Here we keep the first "
            "copier's labels and drop the other four, then start Dawid-Skene from the majority vote.",
            _DS,
            "start:copiers_one_vote",
            "Keep one vote of the clique (majority start)",
            "accuracy",
            "With the clique as one vote, the majority vote already gets **{a[accuracy]:.3f}** right.",
        ),
        Step(
            "Dawid-Skene on independent voters",
            "Run Dawid-Skene again. Its assumption now holds: the five remaining workers err independently.",
            _DS_M,
            "run",
            "Run to convergence",
            "accuracy",
            "Dawid-Skene: accuracy **{a[accuracy]:.3f}** (with the whole clique: {r[ds][accuracy]:.3f}); the honest "
            "workers are now rated **{a[honest_acc]:.2f}** on average.",
        ),
        Step(
            "A real panel: five LLM judges",
            "{r[n_judges]} LLM judges said whether each of {r[n_trajectories]} agent trajectories is faulty "
            "(Mohammadi 2026, gold by construction): a rule checker, an outcome judge and a step judge on "
            "qwen2.5:14b, a step judge on llama3.1:8b, and a self-consistency judge that samples qwen2.5:14b three "
            "times. Three of them run the same model. Dawid-Skene from the majority vote.",
            _DS,
            "start:judges",
            "Start Dawid-Skene on the judges (majority start)",
            "accuracy",
            "The majority vote of the five judges: **{a[accuracy]:.3f}** against the gold.",
        ),
        Step(
            "How many judges does the panel really have?",
            "Run Dawid-Skene and check every pair of judges. Without gold, its accuracy estimates are all we would "
            "see; here we can compare them with the truth.",
            _EFF,
            "run",
            "Run to convergence and check every pair",
            "dependence",
            "Dawid-Skene: accuracy **{a[accuracy]:.3f}**. The two qwen2.5 judges give the same answer "
            "{r[qwen_agree]:.0%} of the time, so Dawid-Skene thinks they are nearly always right "
            "(**{a[acc][selfcons3:qwen2.5:14b]:.2f}**, **{a[acc][step:qwen2.5:14b]:.2f}**); really they are "
            "{r[true_acc][selfcons3:qwen2.5:14b]:.2f} and {r[true_acc][step:qwen2.5:14b]:.2f}. Five judges, "
            "worth about **{a[both]:.1f}** independent ones.",
            details="The check of every pair against Dawid-Skene's fitted truth flags {a[n_flagged_pairs]} of "
            "{a[n_pairs]} pairs (most of all {a[top_pair]}); against the gold it flags {r[gold_flagged]}, the "
            "qwen2.5 pair with κ = {r[qwen_kappa_gold]:.2f}. Effective independent judges from the residual "
            "correlations: {a[eff]:.1f} of {r[n_judges]} ({r[gold_eff]:.1f} against the gold). Kish's count, "
            "for judges that are not equally informative: {a[kish]:.1f}. Both together: {a[both]:.1f}.",
        ),
    ),
)

# -- lesson 6: is the model right? ---------------------------------------------------------------------------
_HELD = (
    r"\log p(x_{ijl} \mid x_{-f}) = \log \sum_k q^{(-f)}_{ik}\, \Gamma_j(l, k), \\ q^{(-f)}_{ik} \propto \pi_k"
    r" \prod_{(i, j', l') \notin f} \Gamma_{j'}(l', k)"
)
_ONE_COIN = r"\Gamma_j(k', k) = \theta_j \text{ if } k' = k, \quad \frac{1 - \theta_j}{K - 1} \text{ otherwise}"
_PPC = (
    r"y^{\mathrm{rep}}_i \sim \pi, \quad x^{\mathrm{rep}}_{ij} \sim \Gamma_j(\cdot, y^{\mathrm{rep}}_i), \\ p = 2"
    r" \min\big(P(T(x^{\mathrm{rep}}) \ge T(x)),\ P(T(x^{\mathrm{rep}}) \le T(x))\big)"
)

FIT_LESSON = Lesson(
    "fit",
    "Is the model right? Held-out labels and replicated crowds",
    "A crowd whose workers share an error on one class: Dawid-Skene fits the labels it was fitted on and fails on "
    "labels it did not see and on crowds replicated from it; one-coin and EBCC do not.",
    (
        Step(
            "A crowd that errs together",
            "{r[n_items]} items, {r[n_workers]} workers, {r[per_item]} labels an item; {r[truth_share]:.0%} of the "
            "items are class 1. On two in five class-0 items every worker says 1 with probability 0.45: an error "
            "the workers share, item by item. We start Dawid-Skene from the majority vote.",
            _DS,
            "start:shared",
            "Start Dawid-Skene (majority start)",
            "accuracy",
            "The majority vote gets **{a[accuracy]:.3f}** of the items right: on a hard item 0.45 is still less "
            "than half.",
        ),
        Step(
            "Dawid-Skene fits the labels it was fitted on",
            "Run Dawid-Skene to convergence. Its objective is the likelihood of these very labels, and it never "
            "goes down. Watch the class prior.",
            _DS_LL,
            "run",
            "Run to convergence",
            "objective",
            "Dawid-Skene: accuracy **{a[accuracy]:.3f}**, against the majority vote's {b[accuracy]:.3f}. It puts "
            "**{a[pi][1]:.0%}** of the items in class 1; the truth is {r[truth_share]:.0%}. Its log-likelihood rose "
            "to {a[objective]:,.1f}, and nothing in it says that anything is wrong.",
        ),
        Step(
            "Ask it about labels it did not see",
            "Hide a fifth of the labels, refit on the rest, and score each hidden label by the probability the "
            "fit gives it, from the item's other labels; five times, so every label is hidden once. Every model is "
            "scored on the same hidden labels, so no gold is needed. The chart compares Dawid-Skene, one-coin and "
            "EBCC; then we try one-coin, a simpler model.",
            _HELD,
            "switch_model:one_coin",
            "Check, then switch to one-coin",
            "fit_check",
            "Held out, Dawid-Skene scores **{r[score][ds]:.3f}** nats per label, one-coin {r[score][one_coin]:.3f} "
            "and EBCC **{r[score][ebcc]:.3f}**: Dawid-Skene is worse than the best by {r[gap][ds]:.3f} ± "
            "{r[gap_se][ds]:.3f}, on {r[n_scored]:,} hidden labels. One-coin now stands at its majority start.",
        ),
        Step(
            "One-coin to convergence",
            "One-coin gives each worker one accuracy and spreads the errors evenly. It has fewer parameters than "
            "Dawid-Skene, so less room to fit what is not there.",
            _ONE_COIN,
            "run",
            "Run to convergence",
            "accuracy",
            "One-coin: accuracy **{a[accuracy]:.3f}** (Dawid-Skene: {r[ds_accuracy]:.3f}), "
            "class 1 at **{a[pi][1]:.0%}**. One accuracy per worker does not explain the hard items either: their "
            "error belongs to the item, not to a worker.",
        ),
        Step(
            "Replicate the crowd from the fitted model",
            "Draw new crowds from Dawid-Skene's fit, with the same items, workers and number of labels, and set "
            "the real labels beside them. A model that is right makes crowds like the real one. Then we switch to "
            "EBCC, whose items carry a subtype within their class.",
            _PPC,
            "switch_model:ebcc",
            "Check the replicates, then switch to EBCC",
            "objective",
            "Beside the crowds replicated from Dawid-Skene, the real labels' {r[ds_check]}, **{r[ds_obs]:.3f}**, "
            "falls outside the replicates' 95 % range {r[ds_lo]:.3f} to {r[ds_hi]:.3f} (p {r[ds_p]}). EBCC "
            "stands at its majority start: ELBO {a[objective]:,.1f}.",
        ),
        Step(
            "EBCC: a subtype for the hard items",
            "Run variational Bayes to convergence. The hard class-0 items can share a subtype of class 0 whose "
            "workers often say 1, so the shared error needs no change to the class prior.",
            _EBCC,
            "run",
            "Run to convergence",
            "accuracy",
            "EBCC: accuracy **{a[accuracy]:.3f}**, class 1 at **{a[pi][1]:.0%}** (the truth {r[truth_share]:.0%}). "
            "The held-out labels recommended **{r[best]}** without a single gold label.",
        ),
    ),
)

LESSONS: dict[str, Lesson] = {
    lesson.key: lesson for lesson in (EM_LESSON, DEPENDENT_LESSON, RISK_LESSON, TRUST_LESSON, COPY_LESSON, FIT_LESSON)
}


def short_title(lesson: Lesson) -> str:
    """A lesson's title up to its colon or parenthesis ("Whom to trust"): the picker's and the home page's name."""
    return lesson.title.split(":")[0].split(" (")[0]
