"""Majority vote's tie rules: flagged ties, and the three rules a user can choose."""

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.io.data import Annotations
from crowdlab.io.metrics import accuracy, soft_accuracy
from crowdlab.models.majority import majority_labels, majority_posterior, tied_items


def _toy():
    # i1: a a b (clear a); i2: b then a (tie, b first); i3: c a (tie, c first); overall a is most frequent
    rows = [("i1", "w1", "a"), ("i1", "w2", "a"), ("i1", "w3", "b"), ("i2", "w1", "b"), ("i2", "w2", "a"),
            ("i3", "w3", "c"), ("i3", "w1", "a"), ("i4", "w2", "a")]  # fmt: skip
    return Annotations.from_labels(*zip(*rows), classes=("a", "b", "c"))


def test_tied_items_flagged():
    assert tied_items(_toy()).tolist() == [False, True, True, False]


def test_tie_rules_by_hand():
    data = _toy()
    name = lambda codes: [data.class_names[k] for k in codes]  # noqa: E731
    assert name(majority_labels(data, "frequent")) == ["a", "a", "a", "a"]
    assert name(majority_labels(data, "first")) == ["a", "b", "c", "a"]
    for seed in range(20):
        lab = name(majority_labels(data, "random", seed))
        assert lab[0] == "a" and lab[1] in ("a", "b") and lab[2] in ("a", "c") and lab[3] == "a"
    draws = {tuple(majority_labels(data, "random", s)) for s in range(40)}
    assert len(draws) == 4  # every combination of the two ties occurs
    assert np.array_equal(majority_labels(data, "random", 5), majority_labels(data, "random", 5))
    with pytest.raises(ValueError, match="tie rule"):
        majority_labels(data, "coin")


def test_random_ties_average_to_the_ties_split_accuracy():
    from crowdlab.io.samples import load_sample

    data = load_sample("dogs")
    assert tied_items(data).sum() > 20
    mean = np.mean([accuracy(majority_labels(data, "random", s), data.gold) for s in range(300)])
    assert mean == pytest.approx(soft_accuracy(majority_posterior(data), data.gold), abs=0.004)


def test_the_rule_reaches_the_run_and_fit():
    data = _toy()
    run = cl.fit(data, "mv", model_options={"tie_break": "first"})
    assert [data.class_names[k] for k in run.labels()] == ["a", "b", "c", "a"]
    assert (cl.fit(data, "mv").labels() == majority_labels(data)).all()
