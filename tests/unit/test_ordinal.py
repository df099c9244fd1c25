"""Ordinal ratings (issue 28, section 4): ``kind="ordinal"`` and the discretised Gaussian annotator
(Lakshminarayanan & Teh 2013's ordinal annotator, fitted by generalised EM)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from crowdlab.engines.run import Run
from crowdlab.errors import DataError
from crowdlab.io.data import Annotations, read_annotations
from crowdlab.models.ordinal import OrdinalDS, ordinal_gamma, posterior_mean_rating
from tests.unit.fuzz_problems import check_run, class_problem


def test_gamma_is_the_binned_gaussian():
    g = ordinal_gamma(np.array([0.3]), np.array([1.2]), 5)[0]
    np.testing.assert_allclose(g.sum(axis=0), 1.0)
    k, lvl = 2, 3
    want = norm.cdf((lvl + 0.5 - k - 0.3) / 1.2) - norm.cdf((lvl - 0.5 - k - 0.3) / 1.2)
    assert g[lvl, k] == pytest.approx(want, rel=1e-12)
    assert g[3, 2] > g[4, 2] > g[0, 2]  # one level off is likelier than two


def _ratings(seed: int, N=300, M=8, K=7):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, K, N)
    bias = rng.normal(0, 1, M)
    spread = rng.uniform(0.4, 1.5, M)
    ii, ww = np.meshgrid(np.arange(N), np.arange(M), indexing="ij")
    ii, ww = ii.ravel(), ww.ravel()
    keep = rng.random(ii.size) < 0.6
    ii, ww = ii[keep], ww[keep]
    noisy = truth[ii] + bias[ww] + spread[ww] * rng.normal(size=ii.size)
    lab = np.clip(np.rint(noisy), 0, K - 1).astype(int)
    data = Annotations(ii, ww, lab, [f"i{n}" for n in range(N)], [f"w{m}" for m in range(M)],
                       [str(k) for k in range(K)], gold=truth)  # fmt: skip
    return data, bias, spread


def test_recovers_bias_and_spread_and_beats_dawid_skene():
    from crowdlab.models import DawidSkene

    data, bias, spread = _ratings(0)
    run = Run(data, OrdinalDS(), "majority")
    run.run()
    check_run(run)
    np.testing.assert_allclose(run.params.extra["bias"], bias, atol=0.25)
    np.testing.assert_allclose(run.params.extra["spread"], spread, atol=0.25)
    ds = Run(data, DawidSkene(prior=1.0), "majority")
    ds.run()
    acc = lambda r: (r.labels() == data.gold).mean()  # noqa: E731
    assert acc(run) > acc(ds)


@pytest.mark.parametrize("seed", range(25))
def test_em_is_monotone_on_adversarial_problems(seed):
    data = class_problem(seed, max_items=25, max_workers=5)
    run = Run(data, OrdinalDS(prior=(0.0, 1.0)[seed % 2]), ("majority", "random")[seed % 2], seed=seed, max_iter=30)
    run.run()
    check_run(run)


def test_kind_ordinal_reader(tmp_path):
    f = tmp_path / "stars.csv"
    f.write_text("item,worker,label\na,w1,5\na,w2,4\nb,w1,1\nb,w2,2.0\nc,w1,10\n")
    d = read_annotations(f, kind="ordinal")
    assert [float(c) for c in d.class_names] == [1, 2, 4, 5, 10] and "ordinal ratings: 5 levels" in " ".join(d.notes)
    np.testing.assert_allclose(posterior_mean_rating(np.eye(5)[[0, 4]], d.class_names), [1.0, 10.0])
    g = tmp_path / "words.csv"
    g.write_text("item,worker,label\na,w1,good\na,w2,bad\n")
    with pytest.raises(DataError, match="is not a number"):
        read_annotations(g, kind="ordinal")


def test_ordinal_is_registered_and_offered_only_for_ratings(tmp_path):
    from crowdlab.models import MODELS, applicable_models, make_model
    from crowdlab.teaching import explain

    assert MODELS["ordinal"] is OrdinalDS and make_model("ordinal_ds", prior=1.0).prior == 1.0
    with pytest.raises(ValueError, match="no hard version"):
        make_model("ordinal", hard=True)
    data, _, _ = _ratings(1, N=60)
    assert "ordinal" not in applicable_models(data)  # numbers read as plain classes
    f = tmp_path / "r.csv"
    f.write_text("item,worker,label\n" + "".join(
        f"i{n},w{m},{data.label[o]}\n" for o, (n, m) in enumerate(zip(data.item, data.worker))
    ))  # fmt: skip
    d = read_annotations(f, kind="ordinal")
    assert d.ordinal and "ordinal" in applicable_models(d)
    run = Run(d, make_model("ordinal"), "majority")  # steps as the Step page steps it: the monotone check on
    for _ in range(6):
        run.step()
    check_run(run)
    e, m = explain.NEW_MODEL_EXPLAINERS["ordinal"]
    assert any(r"\Phi" in line for line in e(d, run.params, 0))
    assert any("b_m = " in line for line in m(d, run.posterior, run.params, 0))


def test_cli_kind_ordinal(tmp_path, capsys):
    from crowdlab.cli import main

    data, _, _ = _ratings(2, N=60)
    f = tmp_path / "r.csv"
    f.write_text("item,worker,label\n" + "".join(
        f"i{n},w{m},{data.label[o]}\n" for o, (n, m) in enumerate(zip(data.item, data.worker))
    ))  # fmt: skip
    assert main(["fit", str(f), "--kind", "ordinal", "--method", "ordinal", "--out", str(tmp_path / "o")]) == 0
    assert "ordinal ratings" in capsys.readouterr().out


@pytest.mark.filterwarnings("error")
def test_extreme_ratings_fit_without_a_warning_and_stay_finite():
    """Issue 42 §5: ratings of +-1e308 warned (overflow in subtract, in the reader's order check) and their mean
    overflowed; the fit and the mean rating stay finite, without a warning."""
    levels = ("-1e308", "1e308", "1.7e308")
    rows = "".join(f"i{n},w{m},{levels[(n + (m == 2)) % 3]}\n" for n in range(12) for m in range(3))
    d = read_annotations(("item,worker,label\n" + rows).encode(), kind="ordinal")
    assert [float(c) for c in d.class_names] == [-1e308, 1e308, 1.7e308]
    run = Run(d, OrdinalDS(), "majority", max_iter=50)
    run.run()
    check_run(run)
    mean = posterior_mean_rating(run.posterior, d.class_names)
    assert np.all(np.isfinite(mean)) and np.all((mean >= -1e308) & (mean <= 1.7e308))
    np.testing.assert_allclose(posterior_mean_rating(np.array([[0.0, 0.5, 0.5]]), d.class_names), [1.35e308])


@pytest.mark.filterwarnings("error")
def test_gamma_stays_finite_for_a_spread_of_zero_or_past_the_cap():
    from crowdlab.models.ordinal import MAX_SPREAD, MIN_SPREAD

    bias = np.array([0.0, 0.0, 1e300, -np.inf])
    g = ordinal_gamma(bias, np.array([0.0, np.inf, 1.0, 1.0]), 4)
    assert np.all(np.isfinite(g)) and np.allclose(g.sum(axis=1), 1.0)
    np.testing.assert_array_equal(g[0], ordinal_gamma(np.zeros(1), np.array([MIN_SPREAD]), 4)[0])
    np.testing.assert_array_equal(g[1], ordinal_gamma(np.zeros(1), np.array([MAX_SPREAD]), 4)[0])
