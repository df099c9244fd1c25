"""Simulated crowds (Dawid-Skene data, Traganitis & Giannakis), the EM lecture's good/bad scorers, samples."""

from __future__ import annotations

import csv
import importlib.util
import json

import numpy as np
import pytest

import crowdlab.io.data
from crowdlab.io.metrics import confusion_error
from crowdlab.io.samples import SAMPLES, load_sample, sample_paths, sample_root
from crowdlab.teaching.simulate import (
    WORKER_TYPES,
    mix_from_counts,
    simulate_crowd,
    simulate_scores,
    worker_type_counts,
)

ALL_TYPES = {"expert": 0.25, "novice": 0.25, "spammer": 0.25, "adversary": 0.25}


def empirical_gamma(sim) -> np.ndarray:
    """(M, K, K) label frequencies per true class: counts[m, said, true] / counts[m, :, true]."""
    a = sim.annotations
    M, K = a.n_workers, a.n_classes
    flat = (a.worker.astype(np.int64) * K + a.label) * K + sim.truth[a.item]
    counts = np.bincount(flat, minlength=M * K * K).reshape(M, K, K).astype(float)
    return counts / counts.sum(axis=1, keepdims=True)


def worker_accuracy(sim) -> np.ndarray:
    a = sim.annotations
    right = np.bincount(a.worker, weights=(a.label == sim.truth[a.item]), minlength=a.n_workers)
    return right / np.bincount(a.worker, minlength=a.n_workers)


# ------------------------------------------------------------ simulate_crowd


def test_shapes_and_conventions():
    sim = simulate_crowd(n_items=50, n_workers=7, n_classes=4, labels_per_item=3, mix=ALL_TYPES, seed=1)
    a = sim.annotations
    assert (a.n_items, a.n_workers, a.n_classes, a.n_obs) == (50, 7, 4, 150)
    assert a.class_names == ("0", "1", "2", "3")
    assert a.name == "simulated crowd"
    assert sim.gamma.shape == (7, 4, 4) and sim.pi.shape == (4,) and sim.truth.shape == (50,)
    assert len(sim.worker_types) == 7 and set(sim.worker_types) <= set(WORKER_TYPES)
    np.testing.assert_allclose(sim.gamma.sum(axis=1), 1.0)  # columns (true class) sum to 1
    assert (sim.gamma >= 0).all()
    np.testing.assert_array_equal(a.gold, sim.truth)
    np.testing.assert_allclose(sim.pi, 0.25)


def test_same_seed_same_crowd_other_seed_differs():
    kw = dict(n_items=80, n_workers=6, n_classes=3, mix=ALL_TYPES)
    s1, s2, s3 = simulate_crowd(**kw, seed=3), simulate_crowd(**kw, seed=3), simulate_crowd(**kw, seed=4)
    np.testing.assert_array_equal(s1.annotations.label, s2.annotations.label)
    np.testing.assert_array_equal(s1.annotations.worker, s2.annotations.worker)
    np.testing.assert_array_equal(s1.gamma, s2.gamma)
    assert s1.worker_types == s2.worker_types
    assert not np.array_equal(s1.gamma, s3.gamma)
    assert not np.array_equal(s1.truth, s3.truth)


def test_worker_types_realised_in_the_labels():
    mix = mix_from_counts({"expert": 3, "novice": 3, "spammer": 2, "adversary": 2})
    sim = simulate_crowd(n_items=4000, n_workers=10, n_classes=3, density=1.0, mix=mix, seed=5)
    types = np.array(sim.worker_types)
    acc = worker_accuracy(sim)
    assert (acc[types == "expert"] > 0.82).all()
    assert (np.abs(acc[types == "novice"] - (1 / 3 + 0.2)) < 0.13).all()
    assert (np.abs(acc[types == "spammer"] - 1 / 3) < 0.04).all()  # uniform prior: chance whatever p_m
    assert (acc[types == "adversary"] < 0.13).all()
    assert acc[types == "expert"].min() > acc[types == "novice"].max() > acc[types == "spammer"].max()
    # the labels follow the generating matrices (eq. 38 error of the empirical Gammas is small)
    assert confusion_error(sim.gamma, empirical_gamma(sim)) < 0.1


def test_spammer_columns_identical_and_experts_diagonal():
    sim = simulate_crowd(n_items=10, n_workers=12, n_classes=4, mix=ALL_TYPES, seed=2)
    types = np.array(sim.worker_types)
    for g in sim.gamma[types == "spammer"]:
        np.testing.assert_allclose(g, np.repeat(g[:, :1], 4, axis=1))
    diag = np.diagonal(sim.gamma, axis1=1, axis2=2)
    assert ((diag[types == "expert"] >= 0.85) & (diag[types == "expert"] <= 0.97)).all()
    assert ((diag[types == "novice"] >= 0.25 + 0.1) & (diag[types == "novice"] <= 0.25 + 0.3)).all()


def test_adversary_mass_on_a_derangement():
    for K in (2, 3, 5):
        sim = simulate_crowd(n_items=10, n_workers=4, n_classes=K, mix={"adversary": 1.0}, seed=K)
        for g in sim.gamma:
            target = g.argmax(axis=0)  # the class each true class is mostly turned into
            assert (target != np.arange(K)).all()
            assert sorted(target.tolist()) == list(range(K))  # a permutation
            assert (np.diag(g) <= 0.1).all()
            assert (g[target, np.arange(K)] >= 0.8 * 0.9).all()


def test_labels_per_item_exact_and_distinct_workers():
    sim = simulate_crowd(n_items=300, n_workers=9, labels_per_item=4, seed=0)
    a = sim.annotations
    np.testing.assert_array_equal(a.labels_per_item, 4)
    pairs = a.item.astype(np.int64) * a.n_workers + a.worker
    assert np.unique(pairs).size == a.n_obs
    # workers are spread over all of the pool, not always the same four
    assert (a.labels_per_worker > 0).all()


def test_default_labels_per_item_is_min_five_and_workers():
    assert (simulate_crowd(n_items=20, n_workers=3).annotations.labels_per_item == 3).all()
    assert (simulate_crowd(n_items=20, n_workers=12).annotations.labels_per_item == 5).all()


def test_density_approximate_and_every_item_labelled():
    sim = simulate_crowd(n_items=2000, n_workers=20, density=0.3, seed=1)
    a = sim.annotations
    assert a.n_obs / (2000 * 20) == pytest.approx(0.3, abs=0.01)
    sparse = simulate_crowd(n_items=500, n_workers=10, density=0.02, seed=1).annotations
    assert (sparse.labels_per_item >= 1).all()
    assert (sparse.labels_per_item == 1).mean() > 0.5  # most items needed the fix-up or drew one worker


def test_class_prior_respected():
    sim = simulate_crowd(n_items=20000, n_workers=2, n_classes=3, class_prior=[0.6, 0.3, 0.1], seed=0)
    freq = np.bincount(sim.truth, minlength=3) / 20000
    np.testing.assert_allclose(freq, [0.6, 0.3, 0.1], atol=0.015)
    np.testing.assert_allclose(sim.pi, [0.6, 0.3, 0.1])


def test_realised_types_match_largest_remainder_counts():
    mix = {"expert": 0.5, "novice": 0.3, "spammer": 0.2}
    sim = simulate_crowd(n_items=5, n_workers=7, mix=mix, seed=0)
    counts = worker_type_counts(7, mix)
    assert counts == {"expert": 4, "novice": 2, "spammer": 1, "adversary": 0}
    assert {t: sim.worker_types.count(t) for t in WORKER_TYPES} == counts


def test_worker_type_counts_largest_remainder():
    assert worker_type_counts(7, {"expert": 1 / 3, "novice": 1 / 3, "spammer": 1 / 3}) == {
        "expert": 3,
        "novice": 2,
        "spammer": 2,
        "adversary": 0,
    }
    third = {"expert": 0.2, "novice": 0.2, "spammer": 0.6}  # 0.6, 0.6, 1.8 of 3
    assert worker_type_counts(3, third) == {"expert": 1, "novice": 0, "spammer": 2, "adversary": 0}
    counts = {"expert": 8, "novice": 4, "spammer": 2, "adversary": 1}
    assert worker_type_counts(15, mix_from_counts(counts)) == counts
    for n in range(1, 30):
        assert sum(worker_type_counts(n, ALL_TYPES).values()) == n


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(n_classes=1), "n_classes must be at least 2"),
        (dict(n_workers=0), "n_workers must be at least 1"),
        (dict(mix={"expert": 1.2, "spammer": -0.2}), "non-negative"),
        (dict(mix={"expert": 0.5, "novice": 0.2}), "sum to 1"),
        (dict(mix={"expert": 0.5, "wizard": 0.5}), "unknown worker type"),
        (dict(n_workers=4, labels_per_item=5), "cannot exceed n_workers"),
        (dict(labels_per_item=2, density=0.5), "not both"),
        (dict(density=0.0), "density must be"),
        (dict(class_prior=[0.5, 0.5]), "needs 3 entries"),
        (dict(class_prior=[0.5, 0.6, -0.1]), "non-negative and sum to 1"),
        (dict(expert_accuracy=(0.9, 0.8)), "expert_accuracy"),
        (dict(n_items=2.5), "whole number"),
    ],
)
def test_simulate_crowd_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_crowd(**kwargs)


def test_mix_from_counts_validation():
    assert mix_from_counts({"expert": 3, "spammer": 1}) == {"expert": 0.75, "spammer": 0.25}
    with pytest.raises(ValueError, match="unknown worker type"):
        mix_from_counts({"guru": 2})
    with pytest.raises(ValueError, match="at least 0"):
        mix_from_counts({"expert": -1, "novice": 2})
    with pytest.raises(ValueError, match="add up to 0"):
        mix_from_counts({"expert": 0})


# ------------------------------------------------------------ simulate_scores


def test_scores_lecture_defaults():
    sim = simulate_scores(seed=0)
    a = sim.annotations
    assert a.is_continuous and a.label is None and a.class_names == ()
    assert (a.n_items, a.n_workers, a.n_obs) == (20, 5, 100)
    assert a.worker_names == ("A0", "A1", "A2", "A3", "A4")
    assert int(sim.good.sum()) == 3
    np.testing.assert_array_equal(a.gold, sim.true_means)
    assert ((sim.true_means >= 0.2) & (sim.true_means <= 0.8)).all()
    assert ((a.value >= 0.0) & (a.value <= 1.0)).all()


def test_scores_good_annotators_not_all_listed_first():
    for seed in range(25):
        good = simulate_scores(n_good=3, n_bad=2, seed=seed).good
        assert good.sum() == 3
        assert not good[:3].all()


def test_scores_good_near_means_bad_spread():
    sim = simulate_scores(n_items=2000, n_good=4, n_bad=3, sigma=0.05, seed=1)
    a = sim.annotations
    dev = a.value - sim.true_means[a.item]
    is_good = sim.good[a.worker]
    rms_good = np.sqrt(np.mean(dev[is_good] ** 2))
    assert 0.045 < rms_good < 0.055  # about sigma
    bad_scores = a.value[~is_good]
    assert bad_scores.std() == pytest.approx(1 / np.sqrt(12), abs=0.01)  # Uniform[0, 1]
    assert abs(np.corrcoef(bad_scores, sim.true_means[a.item[~is_good]])[0, 1]) < 0.05
    assert np.sqrt(np.mean(dev[~is_good] ** 2)) > 0.25


def test_scores_missing_and_range():
    sim = simulate_scores(n_items=1000, n_good=3, n_bad=3, low=1.0, high=5.0, missing=0.4, seed=2)
    a = sim.annotations
    assert a.n_obs / 6000 == pytest.approx(0.6, abs=0.02)
    assert (a.labels_per_item >= 1).all()
    assert ((a.value >= 1.0) & (a.value <= 5.0)).all()
    assert ((sim.true_means >= 1.8) & (sim.true_means <= 4.2)).all()
    heavy = simulate_scores(n_items=300, n_good=1, n_bad=1, missing=0.95, seed=0).annotations
    assert (heavy.labels_per_item >= 1).all()


def test_scores_reproducible():
    s1, s2 = simulate_scores(seed=9), simulate_scores(seed=9)
    np.testing.assert_array_equal(s1.annotations.value, s2.annotations.value)
    np.testing.assert_array_equal(s1.good, s2.good)
    assert not np.array_equal(s1.annotations.value, simulate_scores(seed=10).annotations.value)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(sigma=0.0), "sigma"),
        (dict(low=1.0, high=1.0), "low < high"),
        (dict(missing=1.0), "missing"),
        (dict(n_good=0, n_bad=0), "at least one annotator"),
        (dict(n_good=-1), "n_good"),
    ],
)
def test_simulate_scores_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_scores(**kwargs)


# ------------------------------------------------------------ bundled samples

EXPECTED = {  # key: (items, workers, labels) from each SOURCE.md
    "bluebirds": (108, 39, 4212),
    "rte": (800, 164, 8000),
    "patients": (45, 5, 315),
    "dogs": (807, 109, 8070),
    "affect": (700, 38, 7000),
    "simulated": (600, 15, 2400),
    "judges": (400, 5, 2000),
}


def _rows(path) -> list[list[str]]:
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


def test_sample_registry_files_present():
    assert set(SAMPLES) == set(EXPECTED)
    assert sample_root().name == "sample_data" and (sample_root() / "README.md").exists()
    for key, s in SAMPLES.items():
        assert s.key == key and s.kind in ("classes", "continuous")
        folder = sample_root() / s.folder
        assert (folder / "SOURCE.md").exists()
        labels, gold = sample_paths(key)
        rows = _rows(labels)
        assert rows[0][:3] == ["item", "worker", "label"]  # the judges also give a confidence
        items, workers, n = EXPECTED[key]
        assert len(rows) - 1 == n
        assert len({r[0] for r in rows[1:]}) == items and len({r[1] for r in rows[1:]}) == workers
        n_gold_rows = len(_rows(folder / "gold.csv")) - 1
        assert s.has_gold == (n_gold_rows > 0) == (gold is not None)
    assert SAMPLES["affect"].kind == "continuous"
    with pytest.raises(KeyError, match="unknown sample"):
        sample_paths("nope")


def test_simulated_sample_matches_its_generator():
    spec = importlib.util.spec_from_file_location("make_simulated", sample_root() / "make_simulated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sim = simulate_crowd(**module.PARAMS, mix=mix_from_counts(module.COUNTS))
    a = sim.annotations
    rows = _rows(sample_root() / "simulated_crowd" / "labels.csv")[1:]
    assert rows == [
        [a.item_names[i], a.worker_names[m], a.class_names[k]] for i, m, k in zip(a.item, a.worker, a.label)
    ]
    truth = json.loads((sample_root() / "simulated_crowd" / "truth.json").read_text())
    np.testing.assert_allclose(truth["pi"], sim.pi)
    gam = np.array([w["gamma"] for w in truth["workers"].values()])
    np.testing.assert_allclose(gam, sim.gamma)
    assert [w["type"] for w in truth["workers"].values()] == list(sim.worker_types)
    assert sim.worker_types.count("spammer") == 2 and sim.worker_types.count("adversary") == 1


@pytest.mark.skipif(
    not hasattr(crowdlab.io.data, "read_annotations"), reason="crowdlab.io.data.read_annotations not written yet"
)
@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_load_sample(key):
    ann = load_sample(key)
    assert (ann.n_items, ann.n_workers, ann.n_obs) == EXPECTED[key]
    assert ann.is_continuous == (SAMPLES[key].kind == "continuous")
    assert ann.has_gold == SAMPLES[key].has_gold
    assert ann.name == SAMPLES[key].title
