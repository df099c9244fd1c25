"""Predict, then reveal: questions about what EM's next half-step will do, computed from the run itself.

The lecturer steps EM (Dawid-Skene or MACE) through the class's own votes on the Class page; before a step, a
question goes to every phone ("Which student will EM trust most after this M-step?", "Will item 7 change its
label?", "Will the objective go up, stay, or go down?"); the step runs on the projector beside the class's
predictions. Every right answer is read off the run's snapshots (the run is computed to convergence first), never
written by hand. A lesson asks the same questions about its own run, whose future is not computed yet: there the
answer is read off :func:`ahead`, a copy of the run one half-step further (the run itself does not move, and its
charts show nothing of the step before it runs). No Streamlit here.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from crowdlab.classroom.items import class_annotations
from crowdlab.classroom.store import Item
from crowdlab.engines.fit import fit
from crowdlab.engines.run import Run

METHODS = {"ds": "Dawid-Skene", "mace": "MACE"}
KINDS = {
    "trust": "Which student will EM trust most after the next M-step?",
    "flip": "Will this item change its label at the next E-step?",
    "objective": "Will the objective go up, stay, or go down?",
}
MAX_OPTIONS = 4  # students offered in a "trust" question (a phone shows each as a button)
OBJECTIVE_OPTIONS = ("up", "stay", "down")
FLIP_OPTIONS = ("yes, it changes", "no, it stays")
STAY_TOL = 1e-9  # relative change of the objective below which it "stays" (an E-step leaves it exactly)


@dataclass(frozen=True)
class Question:
    """One question about the run at snapshot ``at``: ``target`` is the snapshot whose outcome answers it (the
    step to run); ``detail`` what the projector shows beside the predictions once it has run."""

    kind: str
    prompt: str
    options: tuple[str, ...]
    answer: str
    at: int
    target: int
    detail: dict = field(default_factory=dict)


def class_run(votes: list[dict], items: Sequence[Item], choices: Sequence[str], method: str = "ds",
              max_iter: int = 200) -> tuple[Run, object]:  # fmt: skip
    """EM (``method``: "ds" or "mace") on the class's votes, run to convergence (every half-step kept); returns
    the run and its Annotations (worker names: the students' pseudonyms)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}")
    data, _ = class_annotations(votes, items, choices, name="our class")
    return fit(data, method, max_iter=max_iter), data


def model_name(run: Run) -> str:
    """ "Dawid-Skene", "MACE", or "EM" for another model."""
    cls = type(run.model).__name__.lower()
    return "MACE" if "mace" in cls else ("Dawid-Skene" if "dawid" in cls else "EM")


def trust(run: Run, index: int) -> np.ndarray:
    """(M,) how far EM trusts each student at snapshot ``index``: Dawid-Skene's accuracy sum_k pi_k Gamma_m(k, k);
    MACE's competence theta_m (1 - its probability of spamming)."""
    params = run.snapshots[index].params
    theta = getattr(params, "extra", {}).get("theta") if hasattr(params, "extra") else None
    return np.asarray(theta if theta is not None else params.worker_accuracy(), dtype=np.float64)


def supports(run: Run | None) -> bool:
    """Whether questions can be asked about ``run`` (Dawid-Skene or MACE: a trust per worker, class labels)."""
    return run is not None and model_name(run) != "EM"


def ahead(run: Run) -> Run:
    """A copy of ``run`` whose snapshots end one half-step after its cursor (the next E- or M-step, computed; the
    cursor stays where it was), so that a question about that half-step has its answer before the lesson runs it;
    ``run`` itself is not touched. The same numbers the run gets when it takes the step (the half-step is a pure
    function of the snapshot before it)."""
    peek = copy.copy(run)
    peek.snapshots = list(run.snapshots[: run.index + 1])
    peek.violations = list(run.violations)
    peek.keep_posteriors = None  # nothing of the shared snapshots is let go by the copy
    peek.params_budget = None
    peek.__dict__.pop("_recomputed", None)
    at = run.index
    if peek.next_kind == "E":
        peek.e_step()
    elif peek.next_kind == "M":
        peek.m_step()
    peek.index = at
    return peek


def _next(run: Run, index: int, kind: str) -> int | None:
    """The first snapshot after ``index`` of ``kind`` ("E" or "M"), or None when the run ends first."""
    return next((s.index for s in run.snapshots[index + 1 :] if s.kind == kind), None)


def _trust_question(run: Run, data, at: int, who: str) -> Question | None:
    target = _next(run, at, "M")
    if target is None:
        return None
    before, after = trust(run, at), trust(run, target)
    if before.size < 2:
        return None
    best = int(np.argmax(after))
    offered = [best]
    for m in [*np.argsort(-before, kind="stable"), *np.argsort(-after, kind="stable")]:  # the likely ones
        if int(m) not in offered and len(offered) < MAX_OPTIONS:
            offered.append(int(m))
    names = [str(data.worker_names[m]) for m in offered]
    order = sorted(range(len(names)), key=lambda j: names[j].casefold())
    name = model_name(run)
    return Question(
        "trust", f"Which {who} will {name} trust most after the next M-step?",
        tuple(names[j] for j in order), names[0], at, target,
        {"before": {names[j]: float(before[offered[j]]) for j in order},
         "after": {names[j]: float(after[offered[j]]) for j in order}},
    )  # fmt: skip


def _flip_question(run: Run, data, at: int, who: str) -> Question | None:
    target = _next(run, at, "E")
    if target is None:
        return None
    q = np.asarray(run.snapshot(at).q)
    if q.ndim != 2 or q.shape[0] == 0:
        return None
    sure = q.max(axis=1)
    untied = sure > 0.5 + 1e-9  # an item split evenly (the majority start's ties) has no label to change
    # the item EM is least sure of now, among those it leans one way on
    n = int(np.argmin(np.where(untied, sure, np.inf))) if untied.any() else int(np.argmin(sure))
    now, then = run.labels(run.snapshots[at]), run.labels(run.snapshots[target])
    item = str(data.item_names[n])
    label = str(data.class_names[now[n]])
    answer = FLIP_OPTIONS[0] if now[n] != then[n] else FLIP_OPTIONS[1]
    return Question(
        "flip", f"Will item {item} (EM says {label!r} now) change its label at the next E-step?",
        FLIP_OPTIONS, answer, at, target,
        {"item": item, "before": label, "after": str(data.class_names[then[n]]),
         "p_before": float(q[n].max()), "p_after": float(np.asarray(run.snapshot(target).q)[n].max())},
    )  # fmt: skip


def _objective_question(run: Run, data, at: int, who: str) -> Question | None:
    if at + 1 >= len(run.snapshots):
        return None
    a, b = run.snapshots[at].objective, run.snapshots[at + 1].objective
    if a is None or b is None:
        return None
    step = run.snapshots[at + 1].kind
    tol = STAY_TOL * max(1.0, abs(a))
    answer = "up" if b - a > tol else ("down" if a - b > tol else "stay")
    return Question(
        "objective", f"Will the objective go up, stay, or go down at the next half-step (an {step}-step)?",
        OBJECTIVE_OPTIONS, answer, at, at + 1, {"before": float(a), "after": float(b), "step": step},
    )  # fmt: skip


_MAKERS = {"trust": _trust_question, "flip": _flip_question, "objective": _objective_question}


def question(run: Run, data, at: int, kind: str, who: str = "student") -> Question | None:
    """The ``kind`` question ("trust", "flip", "objective") about what follows snapshot ``at``, with its right
    answer read off the run; None when the run ends before the step that would answer it. ``who``: what the
    prompt calls a worker (a class's own votes: "student"; a lesson's crowd: "worker")."""
    if kind not in _MAKERS:
        raise ValueError(f"unknown question kind {kind!r}")
    if not 0 <= at < len(run.snapshots):
        raise IndexError(at)
    return _MAKERS[kind](run, data, at, who)


def questions(run: Run, data, at: int, who: str = "student") -> dict[str, Question]:
    """Every question that can be asked at snapshot ``at``, by kind."""
    out = {k: question(run, data, at, k, who) for k in _MAKERS}
    return {k: q for k, q in out.items() if q is not None}
