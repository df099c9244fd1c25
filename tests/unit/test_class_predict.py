"""Predict, then reveal: the questions about EM's next half-step and their right answers, read off the run
(crowdlab.classroom.predict), for Dawid-Skene and MACE."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.classroom import items as ci
from crowdlab.classroom import predict as cp

ROLES = ["honest", "honest", "spammer", "adversary", "honest", "lazy", "honest", "honest"]


def _votes(seed: int = 0) -> tuple[list[dict], list]:
    rng = np.random.default_rng(seed)
    items = ci.dot_items(12, 0.5, seed=1)
    votes = []
    for s, role in enumerate(ROLES):
        for it in items[:10] if s % 2 else items[2:]:
            label = ci.scripted_answer(role, it.truth, ci.DOT_CHOICES, it.difficulty, rng)
            votes.append(dict(student_id=f"s{s}", pseudonym=f"Student {s}", role=role, item_id=it.item_id,
                              prompt=it.prompt, truth=it.truth, label=label, voted=0.0))  # fmt: skip
    return votes, items


@pytest.fixture(scope="module", params=["ds", "mace"])
def run_data(request):
    votes, items = _votes()
    return cp.class_run(votes, items, ci.DOT_CHOICES, request.param)


def test_every_kind_is_asked_and_answered_from_the_run(run_data):
    run, data = run_data
    seen = set()
    for at in range(min(12, len(run.snapshots) - 1)):
        qs = cp.questions(run, data, at)
        assert set(qs) <= set(cp.KINDS) and "objective" in qs
        for q in qs.values():
            assert q.answer in q.options and 2 <= len(q.options) <= cp.MAX_OPTIONS and q.target > at
            seen.add(q.kind)
    assert seen == set(cp.KINDS)


def test_the_trust_answer_is_the_student_with_the_highest_trust_after_the_m_step(run_data):
    run, data = run_data
    for at in (0, 1, 2, 5):
        q = cp.question(run, data, at, "trust")
        assert run.snapshots[q.target].kind == "M"
        assert all(s.kind != "M" for s in run.snapshots[at + 1 : q.target])  # the next M-step, not a later one
        after = cp.trust(run, q.target)
        assert q.answer == str(data.worker_names[int(np.argmax(after))])
        assert q.detail["after"][q.answer] == pytest.approx(after.max())
    name = "MACE" if "mace" in type(run.model).__name__.lower() else "Dawid-Skene"
    assert name in q.prompt


def test_the_objective_stays_at_an_e_step_and_goes_up_at_an_m_step(run_data):
    run, data = run_data
    answers = {}
    for at in range(6):
        q = cp.question(run, data, at, "objective")
        answers[run.snapshots[at + 1].kind] = answers.get(run.snapshots[at + 1].kind, set()) | {q.answer}
        assert "down" != q.answer  # exact EM never lowers its objective
    assert answers["E"] == {"stay"} and answers["M"] == {"up"}


def test_the_flip_answer_compares_the_labels_before_and_after_the_e_step(run_data):
    run, data = run_data
    answers = set()
    for at in range(len(run.snapshots) - 1):
        q = cp.question(run, data, at, "flip")
        if q is None:
            break
        n = list(map(str, data.item_names)).index(q.detail["item"])
        changed = run.labels(run.snapshots[at])[n] != run.labels(run.snapshots[q.target])[n]
        assert q.answer == (cp.FLIP_OPTIONS[0] if changed else cp.FLIP_OPTIONS[1])
        answers.add(q.answer)
    assert cp.FLIP_OPTIONS[1] in answers


def test_nothing_is_asked_past_the_end_of_the_run(run_data):
    run, data = run_data
    assert cp.questions(run, data, len(run.snapshots) - 1) == {}
    with pytest.raises(ValueError):
        cp.question(run, data, 0, "weather")
