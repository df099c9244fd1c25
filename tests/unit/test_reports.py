"""Worker reports: Raykar & Yu's spammer score, Krippendorff's alpha, and the per-worker table."""

import itertools

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.data import Annotations
from crowdlab.reports import krippendorff_alpha, spammer_score, worker_report

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the reliability data of its section C:
# 4 observers, 12 units, values 1-5, "." = missing; nominal alpha = 0.743
KRIPP = {
    "A": "1 2 3 3 2 1 4 1 2 . . .",
    "B": "1 2 3 3 2 2 4 1 2 5 . 3",
    "C": ". 3 3 3 2 3 4 2 2 5 1 .",
    "D": "1 2 3 3 2 4 4 1 2 5 1 .",
}


def _kripp_data():
    rows = [(u, w, v) for w, line in KRIPP.items() for u, v in enumerate(line.split()) if v != "."]
    return Annotations.from_labels(*zip(*rows))


def test_krippendorff_alpha_textbook_example():
    assert krippendorff_alpha(_kripp_data()) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_alpha_brute_force_pairs():
    rng = np.random.default_rng(3)
    items = rng.integers(0, 15, 60)
    workers = rng.integers(0, 6, 60)
    labels = rng.integers(0, 3, 60)
    data = Annotations.from_labels(items, workers, labels)
    # coincidences by enumerating ordered pairs of labels within each unit, each weighted 1/(m_u - 1)
    K = data.n_classes
    o = np.zeros((K, K))
    for u in range(data.n_items):
        vals = data.label[data.item == u]
        if vals.size < 2:
            continue
        for a, b in itertools.permutations(range(vals.size), 2):
            o[vals[a], vals[b]] += 1.0 / (vals.size - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    expected = 1 - (n - np.trace(o)) / n / ((n * n - (n_c**2).sum()) / (n * (n - 1)))
    assert krippendorff_alpha(data) == pytest.approx(expected, abs=1e-12)


def test_spammer_score_properties():
    perfect = np.eye(3)[None]
    spammer = np.tile(np.array([[0.7], [0.2], [0.1]]), (1, 3))[None]  # same answer distribution for every class
    inverted = np.array([[[0.0, 1.0], [1.0, 0.0]]])
    assert spammer_score(perfect)[0] == pytest.approx(1.0)
    assert spammer_score(spammer)[0] == pytest.approx(0.0)
    assert spammer_score(inverted)[0] == pytest.approx(1.0)
    alpha, beta = 0.8, 0.65  # binary: (alpha + beta - 1)^2
    g = np.array([[[beta, 1 - alpha], [1 - beta, alpha]]])
    assert spammer_score(g)[0] == pytest.approx((alpha + beta - 1) ** 2)


def test_worker_report_on_bluebirds():
    from crowdlab.samples import load_sample

    data = load_sample("bluebirds")
    run = cl.fit(data, "ds", prior=1.0)
    df = worker_report(run)
    assert len(df) == data.n_workers and list(df.worker) == list(data.worker_names)
    assert (df.n_labels == 108).all()  # everyone labelled every bird
    assert ((df.lower <= df.accuracy + 1e-9) & (df.accuracy <= df.upper + 1e-9)).all()
    assert df.spammer_score.between(0, 1).all()
    # the worker with the lowest spammer score is close to chance against gold
    worst = df.spammer_score.idxmin()
    said = data.label[data.worker == worst]
    gold = data.gold[data.item[data.worker == worst]]
    assert abs((said == gold).mean() - 0.5) < 0.2
    assert 0 < df.attrs["krippendorff_alpha"] < 1
    assert df.worst_confusion.str.startswith("says").all()
