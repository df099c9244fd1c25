"""crowdlab.plots.data: bins, traces, axis order, fixed colour ranges and blank cells of the data pictures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdlab.analysis.compare import compare_methods
from crowdlab.io.data import Annotations
from crowdlab.io.describe import class_balance, worker_agreement
from crowdlab.io.samples import load_sample
from crowdlab.plots import data as figs
from crowdlab.teaching.simulate import simulate_crowd, simulate_scores


def _one(fig, meta):
    found = [t for t in fig.data if t.meta == meta]
    assert len(found) == 1, [t.meta for t in fig.data]
    return found[0]


@pytest.fixture(scope="module")
def crowd() -> Annotations:
    return simulate_crowd(200, 8, 3, labels_per_item=3, seed=1).annotations


@pytest.fixture(scope="module")
def scores() -> Annotations:
    return simulate_scores(60, 3, 2, sigma=0.05, seed=2).annotations


def test_count_bins_one_bar_per_integer_with_gaps_kept():
    starts, freq, width = figs.count_bins([1, 1, 3, 5, 5, 5])
    assert width == 1
    np.testing.assert_array_equal(starts, [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(freq, [2, 0, 1, 0, 3])


def test_count_bins_widen_when_counts_spread():
    counts = np.arange(0, 1000, 7)
    starts, freq, width = figs.count_bins(counts, max_bins=40)
    assert width == 25 and len(starts) <= 40
    assert freq.sum() == counts.size
    assert starts[0] == 0 and np.all(np.diff(starts) == width)
    # every count falls in its bin [start, start + width)
    idx = (counts - starts[0]) // width
    np.testing.assert_array_equal(np.bincount(idx, minlength=len(freq)), freq)


def test_labels_per_item_histogram_counts_every_item(crowd):
    fig = figs.labels_per_item_histogram(crowd)
    bar = _one(fig, "counts")
    assert bar.type == "bar"
    assert sum(bar.y) == crowd.n_items
    assert list(bar.x) == [3.0] and list(bar.y) == [200]  # every item has exactly 3 labels
    assert fig.layout.xaxis.title.text == "labels on the item"
    assert "mean 3.0" in fig.layout.title.text


def test_count_histogram_pads_a_single_bar_and_counts_in_whole_numbers():
    fig = figs.count_histogram([39] * 5, title="T", x_title="x", y_title="items")
    lo, hi = fig.layout.xaxis.range
    assert lo < 38.5 and hi > 39.5 and hi - lo < 10  # a block around 39, not a sliver at the end of [0, 39]
    assert (fig.layout.yaxis.tick0, fig.layout.yaxis.dtick) == (0, 1)


def test_labels_per_worker_histogram_bins_wide_ranges():
    data = load_sample("rte")  # 164 workers with 20 to 800 labels
    fig = figs.labels_per_worker_histogram(data)
    bar = _one(fig, "counts")
    assert sum(bar.y) == data.n_workers
    assert len(bar.x) <= 40
    assert np.all(np.diff(np.asarray(bar.x)) > 0)  # left to right
    assert "–" in bar.customdata[0]  # hover names the range of a wide bin


def test_class_balance_bars_shares_with_gold_beside(crowd):
    frame = class_balance(crowd)
    fig = figs.class_balance_bars(frame)
    labels, gold = _one(fig, "labels"), _one(fig, "gold")
    assert list(labels.x) == list(crowd.class_names) == list(gold.x)
    np.testing.assert_allclose(labels.y, frame["labels"] / frame["labels"].sum())
    np.testing.assert_allclose(gold.y, frame["gold"] / frame["gold"].sum())
    np.testing.assert_array_equal(labels.customdata, frame["labels"])  # counts in the hover
    assert fig.layout.barmode == "group"
    assert fig.layout.yaxis.tickformat == ".0%"


def test_class_balance_bars_without_gold_has_one_trace():
    frame = pd.DataFrame({"class": ["a", "b"], "labels": [3, 1]})
    fig = figs.class_balance_bars(frame)
    assert [t.meta for t in fig.data] == ["labels"]
    np.testing.assert_allclose(fig.data[0].y, [0.75, 0.25])


def test_agreement_heatmap_fixed_range_rows_top_down_blank_nan():
    z = np.array([[1.0, 0.5, np.nan], [0.5, 1.0, 0.2], [np.nan, 0.2, 1.0]])
    fig = figs.agreement_heatmap(z, ["c", "a", "b"], title="T", shared=np.array([[3, 2, 0], [2, 4, 1], [0, 1, 5]]))
    heat = _one(fig, "agreement")
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    assert heat.coloraxis == "coloraxis"
    # same order on both axes, as given (not sorted); rows top-down
    assert list(heat.x) == ["c", "a", "b"] == list(heat.y)
    assert fig.layout.yaxis.autorange == "reversed"
    # NaN cells are blank (None), with no text
    assert heat.z[0][2] is None and heat.z[2][0] is None
    assert heat.text[0][2] == "" and heat.text[0][1] == "0.50"
    assert heat.hoverongaps is False
    assert heat.customdata[1][2] == 1


def test_agreement_heatmap_hides_numbers_on_large_matrices():
    z = np.eye(20)
    fig = figs.agreement_heatmap(z, [f"w{i}" for i in range(20)], title="T")
    assert fig.data[0].text is None
    with pytest.raises(ValueError):
        figs.agreement_heatmap(np.zeros((2, 3)), ["a", "b"], title="T")
    with pytest.raises(ValueError):
        figs.agreement_heatmap(np.zeros((2, 2)), ["a"], title="T")


def test_worker_agreement_heatmap_most_active_first_matches_describe():
    data = load_sample("dogs")  # 109 workers: only the 30 most active are drawn
    fig = figs.worker_agreement_heatmap(data, limit=30)
    heat = fig.data[0]
    workers, agree, _ = worker_agreement(data, 30)
    assert list(heat.x) == [data.worker_names[w] for w in workers] == list(heat.y)
    counts = data.labels_per_worker[workers]
    assert np.all(np.diff(counts) <= 0)  # most active first
    z = np.array([[np.nan if v is None else v for v in row] for row in heat.z], dtype=float)
    np.testing.assert_allclose(z, agree, equal_nan=True)
    assert not np.isnan(z).any()  # the 30 most active all share items
    assert "30 most active of 109" in fig.layout.title.text
    # with every worker, some pairs share no item: blank cells, and no "most active" in the title
    everyone = figs.worker_agreement_heatmap(data, limit=data.n_workers)
    assert any(v is None for row in everyone.data[0].z for v in row)
    assert "most active" not in everyone.layout.title.text


def test_score_correlation_matches_a_direct_pearson(scores):
    workers, r, shared = figs.score_correlation(scores, limit=10)
    assert r.shape == (5, 5) and np.allclose(np.diag(r), 1.0)
    S = np.full((scores.n_items, scores.n_workers), np.nan)
    S[scores.item, scores.worker] = scores.value
    for a in range(5):
        for b in range(5):
            wa, wb = workers[a], workers[b]
            both = ~np.isnan(S[:, wa]) & ~np.isnan(S[:, wb])
            assert shared[a, b] == both.sum()
            np.testing.assert_allclose(r[a, b], np.corrcoef(S[both, wa], S[both, wb])[0, 1], atol=1e-9)


def test_score_correlation_heatmap_diverging_fixed_range(scores):
    fig = figs.score_correlation_heatmap(scores)
    heat = fig.data[0]
    assert (heat.zmin, heat.zmax) == (-1.0, 1.0)
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (-1.0, 1.0)
    assert fig.layout.yaxis.autorange == "reversed"
    # the three good scorers correlate strongly with each other, the bad ones do not
    sim = simulate_scores(60, 3, 2, sigma=0.05, seed=2)
    names = list(heat.x)
    z = np.array(heat.z, dtype=float)
    good = [i for i, n in enumerate(names) if sim.good[int(n[1:])]]
    bad = [i for i, n in enumerate(names) if not sim.good[int(n[1:])]]
    assert min(z[a, b] for a in good for b in good) > 0.8
    assert max(abs(z[a, b]) for a in bad for b in good) < 0.5


def test_score_correlation_blank_when_too_few_shared_items():
    data = Annotations(
        item=[0, 0, 1, 1, 2, 3],
        worker=[0, 1, 0, 1, 0, 0],
        label=None,
        value=[0.1, 0.2, 0.5, 0.4, 0.3, 0.9],
        item_names=["a", "b", "c", "d"],
        worker_names=["x", "y"],
    )
    _, r, shared = figs.score_correlation(data)
    assert shared[0, 1] == 2 and np.isnan(r[0, 1])
    fig = figs.score_correlation_heatmap(data)
    assert fig.data[0].z[0][1] is None


def test_score_histogram_overlays_gold_on_the_same_bins(scores):
    fig = figs.score_histogram(scores.value, scores.gold, bins=20)
    s, g = _one(fig, "scores"), _one(fig, "gold")
    np.testing.assert_array_equal(s.x, g.x)
    assert len(s.x) == 20
    np.testing.assert_allclose(sum(s.y), 1.0)
    np.testing.assert_allclose(sum(g.y), 1.0)
    assert sum(s.customdata) == scores.n_obs
    assert fig.layout.barmode == "overlay"
    assert [t.meta for t in figs.score_histogram(scores.value).data] == ["scores"]


def test_method_agreement_heatmap_from_a_comparison():
    data = load_sample("bluebirds")
    cmp = compare_methods(data)
    fig = figs.method_agreement_heatmap(cmp.agreement)
    heat = fig.data[0]
    names = [figs.wrap_name(n) for n in cmp.agreement.index]
    assert list(heat.x) == names == list(heat.y)
    assert "One-coin<br>(symmetric noise)" in names and "Dawid-Skene" in names
    z = np.array(heat.z, dtype=float)
    np.testing.assert_allclose(np.diag(z), 1.0)
    np.testing.assert_allclose(z, z.T)
    lo = np.nanmin(np.where(np.eye(len(z), dtype=bool), np.nan, z))
    assert heat.zmax == 1.0 and lo - 0.05 < heat.zmin <= lo  # a range on the data (issue 37)
    assert heat.text is not None  # few methods: numbers on the cells


def test_short_method_names_keep_methods_apart():
    titles = [
        "Majority vote",
        "MACE (competence and spamming)",
        "MACE (variational Bayes)",
        "One-coin (symmetric noise)",
    ]
    assert figs.short_method_names(titles) == ["Majority vote", "MACE", "MACE (VB)", "One-coin"]
    agreement = pd.DataFrame(np.eye(len(titles) * 2), index=titles * 2, columns=titles * 2)  # > 6: short ticks
    fig = figs.method_agreement_heatmap(agreement.iloc[:7, :7])
    assert list(fig.layout.xaxis.ticktext) == list(fig.layout.yaxis.ticktext)
    assert fig.layout.xaxis.ticktext[1:3] == ("MACE", "MACE (VB)")
    assert fig.data[0].textfont.size >= 11  # not plotly's automatic size, ~5 px in narrow cells


def test_worker_agreement_heatmap_square_with_thinned_ticks():
    """Audit at 1024 px: 30 rotated worker ids piled up on the x axis and the matrix was squeezed into a tall
    narrow strip (800 px high in a ~330 px column)."""
    data = load_sample("bluebirds")
    fig = figs.worker_agreement_heatmap(data, 30)
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1  # square cells
    assert fig.layout.height <= 400
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert 1 < len(axis.tickvals) <= 12 and len(axis.ticktext) == len(axis.tickvals)
    heat = fig.data[0]
    assert len(heat.x) == 30 and heat.text is None  # every cell still there (hover); no numbers in tiny cells
    few = figs.worker_agreement_heatmap(data, 5)
    assert few.layout.xaxis.tickvals is None and few.data[0].textfont.size >= 10  # few workers: all labelled
