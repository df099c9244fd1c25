"""Issue 38 section 3: prediction-powered intervals (crowdlab.analysis.ppi) for the accuracy of the aggregated labels
and each class's prevalence, beside the gold-only (Wilson) interval. Closed forms on tiny cases; coverage by
simulation (1,000 gold sets per case, seeded: the numbers are the same on every run)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.analysis.ppi import COLUMNS, gold_intervals, interval_rows, ppi_mean, wilson
from crowdlab.teaching.simulate import simulate_crowd

R = 1000  # replicates per coverage case


def _shared() -> Path | None:
    for base in Path(__file__).resolve().parents:
        if (base / "shared" / "datasets").is_dir():
            return base / "shared" / "datasets"
    return None


def _gold_sets(rng: np.random.Generator, R: int, N: int, n: int, among: np.ndarray | None = None) -> np.ndarray:
    """(R, N) bool: R simple random samples of n items (of ``among`` when given), drawn at once."""
    pool = np.arange(N) if among is None else np.flatnonzero(among)
    idx = pool[np.argsort(rng.random((R, pool.size)), axis=1)[:, :n]]
    gold = np.zeros((R, N), bool)
    np.put_along_axis(gold, idx, True, axis=1)
    return gold


def _coverage(q, labels, truth, n, seed, items=None):
    """Design-based coverage: the crowd and the fit fixed, R random gold sets of n items; theta = the accuracy
    (each class's share) over the items (``items``: those with a known truth). (quantity, PPI coverage, Wilson
    coverage, mean PPI width / mean Wilson width) per quantity."""
    N = len(truth)
    items = np.ones(N, bool) if items is None else items
    gold = _gold_sets(np.random.default_rng(seed), R, N, n, items)
    q, labels, truth = q[items], labels[items], truth[items]
    gold = gold[:, items]
    quantities = [("accuracy", q[np.arange(len(truth)), labels], (labels == truth).astype(float))]
    quantities += [(f"share {k}", q[:, k], (truth == k).astype(float)) for k in range(q.shape[1])]
    out = []
    for name, f, y in quantities:
        theta = y.mean()
        pp = ppi_mean(f, gold, y)
        naive = [wilson(s, n) for s in (gold * y).sum(axis=1)]
        cov_pp = np.mean((pp.low <= theta) & (theta <= pp.high))
        cov_naive = np.mean([iv.low <= theta <= iv.high for iv in naive])
        ratio = np.mean(pp.high - pp.low) / np.mean([iv.width for iv in naive])
        out.append((name, cov_pp, cov_naive, ratio))
    return out


# ---------------------------------------------------------------------------- closed forms
def test_wilson_matches_the_closed_form():
    iv = wilson(8, 10, 0.95)
    # Wilson (1927) at p = 0.8, n = 10, z = 1.96: [0.4902, 0.9433]
    assert iv.low == pytest.approx(0.4902, abs=1e-3) and iv.high == pytest.approx(0.9433, abs=1e-3)
    assert iv.estimate == 0.8
    assert np.isnan(wilson(0, 0).low)


def test_ppi_is_the_mean_of_f_less_the_rectifier():
    rng = np.random.default_rng(0)
    N, n = 200, 40
    f = rng.random(N)
    y = (rng.random(N) < f).astype(float)
    gold = np.zeros(N, bool)
    gold[:n] = True
    iv = ppi_mean(f, gold, y, pseudo=0)
    assert iv.estimate == pytest.approx(f.mean() - (f[:n] - y[:n]).mean())
    se = np.sqrt((1 - n / N) * np.var(f[:n] - y[:n], ddof=1) / n)
    assert iv.se == pytest.approx(se)
    pop = ppi_mean(f, gold, y, pseudo=0, target="population")  # the paper's: f over the items without gold
    assert pop.estimate == pytest.approx(f[n:].mean() - (f[:n] - y[:n]).mean())
    assert pop.se == pytest.approx(np.sqrt(np.var(f[n:], ddof=1) / (N - n) + np.var(f[:n] - y[:n], ddof=1) / n))


def test_perfect_predictions_give_the_truth_and_gold_everywhere_gives_no_width():
    y = np.array([1, 0, 1, 1, 0, 1, 0, 1.0] * 10)
    gold = np.arange(80) < 30
    iv = ppi_mean(y, gold, y)  # f = Y: the rectifier is 0, the estimate exact; the guard keeps a small width
    assert iv.estimate == pytest.approx(y.mean())
    assert 0 < iv.width < wilson(y[gold].sum(), 30).width
    full = ppi_mean(np.full(80, 0.5), np.ones(80, bool), y)
    assert full.estimate == pytest.approx(y.mean()) and full.width == 0.0


def test_rows_need_the_same_number_of_gold_items_and_levels_are_checked():
    f = np.full((2, 10), 0.5)
    gold = np.zeros((2, 10), bool)
    gold[0, :3] = gold[1, :4] = True
    with pytest.raises(ValueError, match="same number"):
        ppi_mean(f, gold, f)
    with pytest.raises(ValueError, match="level"):
        ppi_mean(f[0], gold[0], f[0], level=1.5)
    with pytest.raises(ValueError, match="target"):
        ppi_mean(f[0], gold[0], f[0], target="world")


# ---------------------------------------------------------------------------- the API on real data
def test_gold_intervals_on_a_fitted_run(bluebirds):
    run = cl.fit(bluebirds, "ds")
    half = bluebirds.gold.copy()
    half[::2] = -1
    res = gold_intervals(cl.fit(bluebirds.with_gold(half), "ds"))
    t = res.table
    assert list(t.columns) == list(COLUMNS)
    assert list(t["quantity"]) == ["accuracy of the labels", *(f"share of {c}" for c in bluebirds.class_names)]
    assert res.n_gold == int((half >= 0).sum()) and res.n_items == bluebirds.n_items
    assert (t["PPI low"] <= t["PPI"]).all() and (t["PPI"] <= t["PPI high"]).all()
    assert t["gold only"].iloc[0] == pytest.approx(np.mean((run.labels() == half)[half >= 0]))
    assert "random sample" in res.text() and "accuracy of the labels" in res.text()
    assert cl.gold_intervals is gold_intervals  # the lazy export


def test_gold_intervals_refuses_what_it_cannot_do(bluebirds):
    with pytest.raises(ValueError, match="no gold"):
        gold_intervals(cl.fit(bluebirds.with_gold(None), "ds"))
    with pytest.raises(ValueError, match="seen the gold"):
        gold_intervals(cl.fit(bluebirds, "ds", reveal=0.5))


def test_interval_rows_from_arrays():
    q = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    rows = interval_rows(q, q.argmax(1), np.array([0, 1, -1, -1]), ("a", "b"))
    assert rows["model alone"].tolist() == pytest.approx([0.75, 0.5, 0.5])
    assert rows["gold only"].tolist() == pytest.approx([1.0, 0.5, 0.5])


# ---------------------------------------------------------------------------- coverage by simulation
CASES = [  # (K, N items, n gold, workers' accuracy range): hard to easy crowds, 50 to 500 gold items
    (2, 1000, 50, (0.6, 0.8)),
    (3, 1000, 100, (0.55, 0.75)),
    (2, 2000, 100, (0.85, 0.97)),  # 94 % of labels right: three errors in 50 gold items; the small-n guard's case
    (4, 500, 50, (0.5, 0.7)),
    (3, 2000, 500, (0.6, 0.8)),
]


@pytest.mark.parametrize("case", CASES, ids=[f"K{c[0]}-N{c[1]}-n{c[2]}" for c in CASES])
def test_coverage_on_simulated_crowds(case):
    K, N, n, acc = case
    sim = simulate_crowd(N, 10, K, labels_per_item=3, expert_accuracy=acc, seed=3)
    run = cl.fit(sim.annotations, "ds")
    for name, cov_pp, cov_naive, ratio in _coverage(run.posterior, run.labels(), sim.truth, n, seed=1):
        assert cov_pp >= 0.94, (name, cov_pp)
        assert cov_naive >= 0.93, (name, cov_naive)
        if name != "accuracy":  # the shares: q_nk predicts 1[true = k] well, so PPI is narrower (0.5-0.75 at n >= 100)
            assert ratio < (0.8 if n >= 100 else 0.98), (name, ratio)
        assert ratio < 1.1, (name, ratio)  # the accuracy at n = 50: 1.08 (the small-n guard), else <= 1


def test_coverage_on_real_labels_with_the_known_gold_as_the_truth():
    """RTE (800 items, all with gold): the fit fixed, 1,000 random gold sets of 100 items, the accuracy over all."""
    shared = _shared()
    if shared is None or not (shared / "snow2008_rte").is_dir():
        pytest.skip("the shared datasets are not beside this checkout")
    data = cl.read_annotations(shared / "snow2008_rte" / "labels.csv", gold=shared / "snow2008_rte" / "gold.csv")
    run = cl.fit(data, "ds")
    assert run.posterior[np.arange(data.n_items), run.labels()].mean() > 0.98  # the model alone: 0.99, truly 0.93
    for name, cov_pp, _, ratio in _coverage(run.posterior, run.labels(), data.gold, 100, seed=2, items=data.gold >= 0):
        assert cov_pp >= 0.94, (name, cov_pp)  # the bare CLT interval: 0.92 for the accuracy
        # the accuracy: f = q of the label is near 1 everywhere, so it says nothing of which labels are wrong
        assert ratio < (1.05 if name == "accuracy" else 0.6), (name, ratio)


def test_coverage_of_the_population_target_with_a_new_crowd_each_time():
    """The paper's setting: theta = E[Y] over the population; every replicate draws new items and a new crowd
    (binary, 3 labels an item from one-coin workers of accuracy 0.7, class 1's prevalence 0.3) and 100 gold
    items; f = the majority vote's vote share. Vectorised over the 1,000 replicates."""
    rng = np.random.default_rng(7)
    N, n, L, p, pi1 = 1000, 100, 3, 0.7, 0.3
    truth = (rng.random((R, N)) < pi1).astype(int)
    right = rng.random((R, N, L)) < p
    votes1 = np.where(right, truth[..., None], 1 - truth[..., None]).sum(axis=2)  # labels saying class 1
    share1 = votes1 / L
    label = (votes1 * 2 > L).astype(int)
    f_acc = np.where(label == 1, share1, 1 - share1)
    gold = _gold_sets(rng, R, N, n)
    acc = p**3 + 3 * p**2 * (1 - p)  # P(the majority of three is right)
    for f, y, theta in ((f_acc, (label == truth).astype(float), acc), (share1, truth.astype(float), pi1)):
        pp = ppi_mean(f, gold, y, target="population")
        assert np.mean((pp.low <= theta) & (theta <= pp.high)) >= 0.94


# ---------------------------------------------------------------------------- the command line
def test_cli_intervals_prints_the_table_and_writes_intervals_csv(tmp_path, capsys):
    import pandas as pd

    from crowdlab.cli import main
    from crowdlab.io.samples import sample_paths

    labels, gold = sample_paths("bluebirds")
    half = tmp_path / "half.csv"
    g = pd.read_csv(gold)
    g.iloc[::2].to_csv(half, index=False)
    out = tmp_path / "out"
    assert main(["fit", str(labels), "--gold", str(half), "--out", str(out), "--intervals"]) == 0
    text = capsys.readouterr().out
    assert "With gold on 54 of 108 items: 95% intervals" in text and "share of 0" in text
    table = pd.read_csv(out / "intervals.csv")
    assert list(table.columns) == list(COLUMNS) and len(table) == 3
    assert main(["fit", str(labels), "--gold", str(half), "--out", str(out)]) == 0  # no --intervals: no stale file
    assert not (out / "intervals.csv").exists()
    assert main(["fit", str(labels), "--out", str(out), "--intervals"]) == 2
    assert "--intervals needs --gold" in capsys.readouterr().err
    assert main(["fit", str(labels), "--gold", str(half), "--out", str(out), "--intervals", "--reveal", "0.5"]) == 2
    assert "not seen the gold" in capsys.readouterr().err
