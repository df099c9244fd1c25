"""Next-item routing of a live class (uncertainty sampling): the store hands items one at a time, the router picks
the least certain one, and the simulated comparison with a fixed deal."""

from __future__ import annotations

import sqlite3
from collections import Counter

import numpy as np
import pytest

from crowdlab.classroom import items as ci
from crowdlab.classroom import store as cs
from crowdlab.classroom.store import ClassError, ClassStore, Item
from tests.unit.test_class_store import url  # noqa: F401  (the SQLite / PostgreSQL fixture)

CHOICES = ("yes", "no")
IDS = [f"i{k}" for k in range(6)]


@pytest.fixture
def store(url):  # noqa: F811  SQLite, and PostgreSQL when a server answers (the fixture of test_class_store)
    s = ClassStore(url)
    yield s
    s.close()


def _routed(store, per_student=3):
    items = [Item(i, f"item {i}", truth="yes") for i in IDS]
    return store.create_session(items, CHOICES, per_student=per_student, routing=True)


def test_a_routed_student_is_handed_items_one_at_a_time(store):
    session, key = _routed(store)
    assert store.session(session.id).routing is True
    student, token = store.join(session.join_code, "Ann")
    assert student.assigned == ()  # nothing dealt at join
    asked = []

    def choose(candidates, votes, handed):
        asked.append((list(candidates), list(votes), dict(handed)))
        return candidates[-1]

    first = store.next_item(token, choose)
    assert first == "i5" and asked[0][0] == IDS and asked[0][2] == {}
    assert store.next_item(token, choose) == "i5" and len(asked) == 1  # a reload: the same item, nobody asked
    with pytest.raises(ClassError, match="not one of yours"):
        store.vote(token, "i0", "yes")  # not handed: refused
    store.vote(token, "i5", "no")
    assert store.next_item(token, choose) == "i4"
    assert asked[1][0] == IDS[:5] and asked[1][1] == [(student.id, "i5", "no")] and asked[1][2] == {"i5": 1}
    store.vote(token, "i4", "yes")
    assert store.next_item(token, choose) == "i3"
    store.vote(token, "i3", "yes")
    assert store.next_item(token, choose) is None  # per_student reached
    counts = store.counts(session.id, key)
    assert counts["done"] == 1 and counts["votes"] == 3


def test_a_second_tab_that_was_handed_an_item_meanwhile_wins(store):
    session, _ = _routed(store)
    _, token = store.join(session.join_code, "Ann")

    def slow_choose(candidates, votes, handed):  # while this tab decides, the other tab is handed i2
        assert store.next_item(token, lambda c, v, h: "i2") == "i2"
        return "i0"

    assert store.next_item(token, slow_choose) == "i2"
    assert store.student(token).assigned == ("i2",)


def test_routing_refuses_a_choice_outside_the_candidates_and_stops_when_closed(store):
    session, key = _routed(store)
    _, token = store.join(session.join_code, "Ann")
    with pytest.raises(ValueError, match="not one of the candidates"):
        store.next_item(token, lambda c, v, h: "nope")
    assert store.student(token).assigned == ()
    store.set_status(session.id, key, "closed")
    assert store.next_item(token, lambda c, v, h: c[0]) is None


def test_a_fixed_deal_is_unchanged(store):
    session, _ = store.create_session([Item(i, i) for i in IDS], CHOICES, per_student=3)
    student, token = store.join(session.join_code, "Ann")
    assert len(student.assigned) == 3
    never = lambda c, v, h: pytest.fail("a fixed deal never asks the router")  # noqa: E731
    assert store.next_item(token, never) == student.assigned[0]
    for i in student.assigned:
        store.vote(token, i, "yes")
    assert store.next_item(token, never) is None


def test_a_version_1_database_gains_the_routing_column(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied DOUBLE PRECISION)")
    for statement in cs.MIGRATIONS[0][1]:
        conn.execute(statement.replace("{blob}", "BLOB"))
    conn.execute("INSERT INTO schema_version VALUES (1, 0)")
    conn.execute(
        "INSERT INTO sessions (id, join_code, key_hash, title, choices, per_student, shares, status, created, "
        "code_expires, expires) VALUES ('s1', 'ABCDEF', 'h', 'Old', '[\"yes\", \"no\"]', 2, '{}', 'open', 0, "
        "1e12, 1e12)"
    )
    conn.commit()
    conn.close()
    store = ClassStore(str(path))
    assert store.schema_version() == cs.SCHEMA_VERSION == 4  # 2: routing; 3: hashed address and browser; 4: predictions
    assert store.session("s1").routing is False and store.session("s1").title == "Old"
    store.close()


# ---------------------------------------------------------------------------------------------- the router
def test_item_posteriors_smoothed_shares_then_dawid_skene():
    votes = [("a", "i0", "yes"), ("b", "i0", "yes"), ("c", "i1", "no")]
    q = ci.item_posteriors(votes, IDS, CHOICES)
    assert q["i0"] == pytest.approx([3 / 4, 1 / 4]) and q["i1"] == pytest.approx([1 / 3, 2 / 3])
    assert q["i5"] == pytest.approx([0.5, 0.5])  # nobody labelled it
    # 8 students x 6 items, all agreeing: Dawid-Skene is sure of every item
    many = [(f"s{s}", i, "yes" if i != "i3" else "no") for s in range(8) for i in IDS]
    q = ci.item_posteriors(many, IDS, CHOICES)
    assert len(many) >= ci.ROUTE_DS_FROM * len(IDS)
    assert q["i0"][0] > 0.999 and q["i3"][1] > 0.999


def test_route_next_floor_then_entropy_then_spread():
    handed = {i: 3 for i in IDS} | {"i5": 1}
    votes = [("s0", i, "yes") for i in IDS[:5]]
    # i5 has fewer than the floor: it goes first whatever the entropies
    assert ci.route_next(IDS, votes, handed, IDS, CHOICES, rng=np.random.default_rng(0)) == "i5"
    # everyone at the floor; i2 and i4 split 1-1 (the largest entropy), the rest agree
    handed = {i: 3 for i in IDS}
    votes = [("s0", i, "yes") for i in IDS] + [("s1", "i2", "no"), ("s1", "i4", "no"), ("s1", "i0", "yes")]
    assert len(votes) < ci.ROUTE_DS_FROM * len(IDS)  # the smoothed shares decide
    pick = ci.route_next(IDS, votes, handed, IDS, CHOICES, rng=np.random.default_rng(0))
    assert pick in ("i2", "i4")
    # two students asking at once are spread: the item handed and not yet answered counts against itself
    handed[pick] += 1
    other = ci.route_next(IDS, votes, handed, IDS, CHOICES, rng=np.random.default_rng(0))
    assert {pick, other} == {"i2", "i4"}


def test_simulated_classes_with_and_without_routing():
    items = ci.dot_items(12, 0.6, seed=3)
    fixed = ci.simulate_class(items, ci.DOT_CHOICES, students=12, per_student=5, routing=False, seed=1)
    routed = ci.simulate_class(items, ci.DOT_CHOICES, students=12, per_student=5, routing=True, seed=1)
    assert len(fixed) == len(routed) == 60
    assert sorted(Counter(v["item_id"] for v in fixed).values()) == [5] * 12  # a fixed deal spreads evenly
    per = Counter(v["item_id"] for v in routed)
    assert min(per.values()) >= ci.ROUTE_FLOOR  # every item got its floor
    for votes in (fixed, routed):  # nobody is handed an item twice
        assert len({(v["student_id"], v["item_id"]) for v in votes}) == len(votes)
    assert ci.simulate_class(items, ci.DOT_CHOICES, students=12, per_student=5, routing=True, seed=1) == routed
    curve = ci.accuracy_over_labels(routed, items, ci.DOT_CHOICES, points=4)
    assert curve["labels"] == [15, 30, 45, 60]
    rev = ci.reveal(routed, items, ci.DOT_CHOICES)  # the curve's last point is the reveal's accuracy
    assert curve["mv"][-1] == pytest.approx(rev["class"]["mv_accuracy"])
    assert curve["ds"][-1] == pytest.approx(rev["class"]["ds_accuracy"])
    assert all(0 <= a <= 1 for a in curve["mv"] + curve["ds"])
    both = ci.routing_comparison(items, ci.DOT_CHOICES, students=12, per_student=5, seeds=2, points=3)
    assert set(both) == {"routing", "fixed deal"} and both["routing"]["labels"] == [20, 40, 60]
