"""Every figure builder escapes user-supplied names (crowdlab.io.safe.html at the point they enter the figure).

The hostile dataset (tests/data/hostile_long.csv, hostile_gold.csv) names its items, workers and classes with
Markdown, HTML, LaTeX, plotly hover-template fields and spreadsheet formulas. No string of any built figure may
carry a tag that did not come from the builder itself, a raw ``$...$`` from a name, or a ``%{...}`` field from a
name (plotly would substitute it).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowdlab import plots
from crowdlab.analysis.compare import compare_methods
from crowdlab.analysis.surface import coords_for
from crowdlab.engines.fit import fit
from crowdlab.io.data import read_annotations
from crowdlab.io.describe import class_balance
from crowdlab.plots import data as data_figs
from crowdlab.plots import dependent, risk
from crowdlab.teaching.simulate import simulate_scores

DATA = Path(__file__).resolve().parents[1] / "data"
BUILDER_TAGS = re.compile(r"</?(br|b|extra)>")  # the only tags the builders write themselves


@pytest.fixture(scope="module")
def hostile():
    return read_annotations(DATA / "hostile_long.csv", gold=DATA / "hostile_gold.csv")


@pytest.fixture(scope="module")
def hostile_scores(hostile):
    d = simulate_scores(len(hostile.item_names), len(hostile.worker_names) - 2, 2, seed=1).annotations
    return dataclasses.replace(d, item_names=hostile.item_names, worker_names=hostile.worker_names)


def strings(obj):
    """Every string inside a figure dict (lists, tuples and object arrays included)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from strings(v)
    elif isinstance(obj, np.ndarray) and obj.dtype.kind in "OUS":
        for v in obj.ravel().tolist():
            yield from strings(v)


def assert_escaped(fig, *must_show: str) -> None:
    texts = list(strings(fig.to_dict()))
    for s in texts:
        assert "<" not in BUILDER_TAGS.sub("", s), s
        assert "$x^2$" not in s and "%{fullData" not in s, s
        assert not re.search(r"&(quot|apos|#x27);", s), s  # entities plotly.js does not decode
    joined = "\n".join(texts)
    for name in must_show:  # the names are in the figure, escaped (not dropped)
        assert name in joined, (name, joined[:2000])


SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"
LINK = "&lt;a href=&#34;https://example.org/&#34;&gt;x&lt;/a&gt;"
IMAGE_CLASS = "![t](https://example.org/t.png)"
TEX_ITEM = "&#36;x^2&#36;"


def test_data_figures(hostile):
    assert_escaped(data_figs.worker_agreement_heatmap(hostile), SCRIPT, LINK)
    assert_escaped(data_figs.class_balance_bars(class_balance(hostile)), IMAGE_CLASS)
    assert_escaped(data_figs.labels_per_item_histogram(hostile))
    assert_escaped(data_figs.labels_per_worker_histogram(hostile))
    agreement = pd.DataFrame(np.eye(2), index=["<b>m</b> (x)", "$x^2$"], columns=["<b>m</b> (x)", "$x^2$"])
    fig = data_figs.method_agreement_heatmap(agreement)
    assert_escaped(fig, "&lt;b&gt;m&lt;/b&gt;<br>(x)", TEX_ITEM)


def test_score_figures(hostile_scores):
    d = hostile_scores
    assert_escaped(data_figs.score_correlation_heatmap(d), SCRIPT)
    run = fit(d, "scores")
    p = run.params
    assert_escaped(plots.annotator_bars(run.posterior[:, 1], d.worker_names), SCRIPT, LINK)
    assert_escaped(plots.item_means_scatter(p.mu, p.mu, d.item_names, reference_name="<i>ref</i>"), TEX_ITEM)
    assert_escaped(plots.reliability_scatter(d.labels_per_worker.astype(float), run.posterior[:, 1], d.worker_names))


def test_run_figures(hostile):
    d = hostile
    run = fit(d, "ds")
    p = run.params
    changed = np.zeros(d.n_items, dtype=bool)
    changed[:3] = True
    fig = plots.posterior_heatmap(run.posterior, d.item_names, d.class_names, d.gold, changed=changed)
    assert_escaped(fig, TEX_ITEM)
    assert_escaped(plots.confusion_grid(p.gamma, d.worker_names, d.class_names), SCRIPT, LINK, IMAGE_CLASS)
    assert_escaped(plots.reliability_scatter(d.labels_per_worker.astype(float), p.worker_accuracy(), d.worker_names))
    assert_escaped(plots.class_prior_bars(p.pi, d.class_names, reference=p.pi, reference_name="<b>gold</b>"))
    h = run.history()
    assert_escaped(plots.objective_curve(h, run.index, title="<script>alert(1)</script>", objective_name="<b>o</b>"))
    x = plots.half_step_positions(h["kind"], h["iteration"])
    pis = np.array([s.params.pi for s in run.snapshots])
    values = {f"π({c})": pis[:, k] for k, c in enumerate(d.class_names)}
    assert_escaped(plots.metric_curve(x, values, float(x[-1]), title="$x^2$"), "π(" + IMAGE_CLASS + ")")
    two = fit(d, "two_coin")
    alpha, beta = two.params.extra["alpha"], two.params.extra["beta"]
    assert_escaped(plots.sens_spec_scatter(alpha, beta, d.worker_names), SCRIPT)
    coords = coords_for("two_coin", d.n_workers)
    lx, ly = coords[2].label(d), coords[3].label(d)
    g = np.linspace(0, 1, 5)
    fig = plots.objective_contour(g, g, np.outer(g, g), [0.2, 0.5], [0.3, 0.6], x_title=lx, y_title=ly, title=lx)
    assert_escaped(fig)


def test_dependent_and_risk_figures(hostile):
    d = hostile
    script = "<script>alert(1)</script>"
    rows = {"truth": np.array([0, 1, 1, 0]), script: np.array([0, 1, 0, 0])}
    conf = {script: np.array([0.9, 0.8, 0.7, 0.6])}
    fig = dependent.sequence_strip(rows, d.class_names, confidence=conf)
    assert_escaped(fig, SCRIPT, IMAGE_CLASS)
    assert [t for t in fig.data if t.meta == "mistakes"], "the truth row is still found by its raw name"
    assert_escaped(dependent.transition_heatmap(np.eye(2), d.class_names), IMAGE_CLASS)
    pos = np.random.default_rng(0).random((d.n_items, 2))
    edges = np.array([[0, 1], [1, 2]])
    labels = np.zeros(d.n_items, dtype=int)
    fig = dependent.network_figure(pos, edges, labels, np.ones(d.n_items), d.class_names, names=d.item_names)
    assert_escaped(fig, TEX_ITEM, IMAGE_CLASS)
    F = np.random.default_rng(1).random((3, d.n_workers))
    assert_escaped(risk.roc_trail(F, F, d.worker_names, kinds=["<b>k</b>"] * d.n_workers), SCRIPT, LINK)
    est = np.linspace(0.2, 0.8, d.n_workers)
    fig = risk.interval_chart(d.worker_names, est, est - 0.1, est + 0.1, x_title="P(says $x^2$)", title="$x^2$")
    assert_escaped(fig, SCRIPT, LINK)


def test_compare_heatmap_on_hostile_data(hostile):
    comparison = compare_methods(hostile, ["mv", "ds", "one_coin"])
    assert_escaped(data_figs.method_agreement_heatmap(comparison.agreement))
