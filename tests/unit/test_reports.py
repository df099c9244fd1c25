"""Worker reports: Raykar & Yu's spammer score, Krippendorff's alpha, and the per-worker table."""

import itertools

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.analysis.reports import krippendorff_alpha, spammer_score, worker_report
from crowdlab.io.data import Annotations

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
    from crowdlab.io.samples import load_sample

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


@pytest.mark.parametrize("method", ["ds", "one_coin", "two_coin", "glad", "mace", "mace_vb", "ibcc"])
def test_every_interval_holds_its_estimate(method):
    """The interval is of the accuracy the table shows (it used to be of the agreement with the posterior labels,
    which left e.g. 33 of IBCC's 44 music-genre workers outside their own interval)."""
    from crowdlab.io.samples import load_sample

    data = load_sample("bluebirds")
    df = worker_report(cl.fit(data, method))
    assert ((df.lower <= df.accuracy + 1e-9) & (df.accuracy <= df.upper + 1e-9)).all()
    assert (df.upper - df.lower > 0.01).all()  # 108 labels each: no interval is a point
    kinds = set(df.interval)
    if method in ("mace_vb", "ibcc"):
        assert kinds == {"credible (posterior, 4,000 draws)"}
    elif method == "glad":
        assert kinds == {"Clopper-Pearson (the estimate over n labels, labels as known)"}
    elif method == "mace":
        assert kinds == {"Wald (observed information of the worker's own θ, ξ)"}
    else:
        assert kinds == {"Wald (observed information)"}


def test_the_fallback_interval_is_the_exact_binomial_one_at_the_estimate():
    from scipy.stats import binomtest

    from crowdlab.analysis.fisher import clopper_pearson

    # integer counts: scipy's exact interval; the ends 0 and n: one-sided
    for k, n in [(0, 5), (3, 5), (5, 5), (37, 108), (1, 1)]:
        ci = binomtest(k, n).proportion_ci(0.95, method="exact")
        lo, hi = clopper_pearson(np.array([k], float), np.array([n], float), 0.95)
        assert (lo[0], hi[0]) == pytest.approx((ci.low, ci.high), abs=1e-12)
    from crowdlab.io.samples import load_sample

    data = load_sample("dogs")  # workers with 1 to 800 labels
    run = cl.fit(data, "ds", prior=1.0)
    df = worker_report(run, intervals=False)
    n = df.n_labels.to_numpy(float)
    lo, hi = clopper_pearson(df.accuracy.to_numpy() * n, n, 0.95)
    np.testing.assert_array_equal(df.lower, lo)
    np.testing.assert_array_equal(df.upper, hi)
    # fewer labels, a wider interval, at about the same accuracy
    few, many = df.n_labels.idxmin(), df.n_labels.idxmax()
    assert df.upper[few] - df.lower[few] > 3 * (df.upper[many] - df.lower[many])


def test_the_report_shows_the_models_own_accuracy_and_an_hmm_interval_holds_it():
    """An HMM weighs a worker's diagonal by its chain's stationary distribution (``worker_accuracy``); the report
    weighed by the start distribution pi0, so on CoNLL the CLI's workers.csv said 0.853 in [0.635, 0.661]."""
    from crowdlab.teaching.simulate import simulate_sequences

    sim = simulate_sequences(30, 25, 3, 5, pi0=[0.9, 0.05, 0.05], seed=3)  # pi0 far from stationary
    run = cl.fit(sim.annotations, "hmm", max_iter=50)
    df = worker_report(run)
    np.testing.assert_allclose(df.accuracy, run.params.worker_accuracy(), rtol=0, atol=1e-15)
    assert not np.allclose(
        run.params.worker_accuracy(), np.diagonal(run.params.gamma, axis1=1, axis2=2) @ run.params.pi
    )
    assert ((df.lower <= df.accuracy) & (df.accuracy <= df.upper)).all()
    for method in ("ds", "ibcc"):
        fit = cl.fit(sim.annotations, method)
        np.testing.assert_allclose(worker_report(fit).accuracy, fit.params.worker_accuracy(), rtol=0, atol=1e-15)


def test_glads_report_averages_its_accuracy_over_the_workers_own_items():
    """GLAD's accuracy depends on the item: sigma(alpha_j beta_i). The report gave the median item's value, which
    read 0.066 above the workers' gold-based accuracy on a simulated crowd; the mean over each worker's own
    items is the model's estimate of the share of that worker's labels that are right."""
    from crowdlab.teaching.simulate import simulate_crowd

    d = simulate_crowd(n_items=300, n_workers=10, n_classes=2, labels_per_item=5, seed=100).annotations
    run = cl.fit(d, "glad")
    df = worker_report(run)
    p = run.params
    x = p.alpha[d.worker] * p.beta[d.item]
    by_hand = [np.mean(1.0 / (1.0 + np.exp(-x[d.worker == j]))) for j in range(d.n_workers)]
    np.testing.assert_allclose(df.accuracy, by_hand, rtol=0, atol=1e-13)
    assert "σ(α_j β_i)" in df.attrs["accuracy_formula"]
    gold = np.bincount(d.worker, d.label == d.gold[d.item], d.n_workers) / np.bincount(d.worker)
    assert abs(np.mean(df.accuracy - gold)) < 0.04 < abs(np.mean(p.worker_accuracy() - gold))
    assert ((df.lower <= df.accuracy) & (df.accuracy <= df.upper)).all()
    assert worker_report(cl.fit(d, "ds")).attrs["accuracy_formula"] == "Σ_k π_k Γ(k, k)"
