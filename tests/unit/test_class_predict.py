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


@pytest.mark.parametrize("method", ["ds", "mace"])
def test_a_question_asked_ahead_of_a_live_run_has_the_answer_the_run_then_gets(method):
    """A lesson's run ends at its cursor: :func:`ahead` computes the next half-step on a copy (the run is not
    touched), and every question about that half-step has the answer the run gets when it takes the step."""
    from crowdlab.engines.run import Run
    from crowdlab.models import MACE, DawidSkene

    _, data = cp.class_run(*_votes(), ci.DOT_CHOICES, method)
    run = Run(data, DawidSkene() if method == "ds" else MACE(), "majority")
    assert cp.supports(run) and not cp.supports(None)
    for _ in range(6):
        at, n, kind = run.index, len(run.snapshots), run.next_kind
        peek = cp.ahead(run)
        asked = cp.questions(peek, data, at, who="worker")
        assert (run.index, len(run.snapshots)) == (at, n)  # the run itself did not move nor grow
        assert peek.index == at and len(peek.snapshots) == at + 2 and peek.snapshots[at] is run.snapshots[at]
        assert set(asked) == ({"flip", "objective"} if kind == "E" else {"trust", "objective"})
        run.e_step() if kind == "E" else run.m_step()
        for k, q in asked.items():
            real = cp.question(run, data, at, k, who="worker")
            assert (q.answer, q.options, q.target, q.prompt) == (real.answer, real.options, real.target, real.prompt)
        if "trust" in asked:
            assert asked["trust"].prompt.startswith("Which worker will")


def test_the_flip_question_asks_about_an_item_em_leans_one_way_on():
    """At the majority start some items are split evenly: the question names the least sure item that is not."""
    run, data = cp.class_run(*_votes(), ci.DOT_CHOICES, "ds")
    q0 = np.asarray(run.snapshot(0).q).max(axis=1)
    q = cp.question(run, data, 0, "flip")
    n = list(map(str, data.item_names)).index(q.detail["item"])
    assert q0[n] > 0.5 and q0[n] == pytest.approx(q0[q0 > 0.5 + 1e-9].min())
