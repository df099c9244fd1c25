"""Nothing non-finite leaves the package: huge and tiny scores, edge weights near overflow, the engine's stop on a
NaN, and the writers' refusal of NaN/inf (JSON, CSV tables)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from crowdlab.analysis.export import (
    check_finite_frame,
    history_dict,
    metrics_dict,
    params_dict,
    posterior_frame,
    to_json,
    worker_frame,
)
from crowdlab.cli import main
from crowdlab.engines.run import Run
from crowdlab.errors import DataError, ModelError
from crowdlab.io import limits
from crowdlab.io.data import Annotations
from crowdlab.io.metrics import pearson
from crowdlab.models import DawidSkene, GoodBadScores, MajorityVote, NetworkCrowd
from crowdlab.models.scores import score_range
from crowdlab.plots.data import score_correlation, score_histogram
from tests.unit.problems import random_problem

BIG = np.finfo(np.float64).max


def scores(v: np.ndarray, N: int = 12, M: int = 6, gold=None) -> Annotations:
    ii, aa = np.meshgrid(np.arange(N), np.arange(M), indexing="ij")
    return Annotations(
        ii.ravel(), aa.ravel(), None, [f"i{n}" for n in range(N)], [f"a{m}" for m in range(M)], value=v, gold=gold
    )


def base_scores(seed: int = 0, N: int = 12, M: int = 6) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mu = rng.uniform(0.2, 0.8, N)
    good = np.arange(M) < M // 2 + 1
    v = np.where(good[None, :], mu[:, None] + rng.normal(0, 0.03, (N, M)), rng.random((N, M)))
    return np.clip(v, 0, 1).ravel()


def fitted(data: Annotations, **kw) -> Run:
    # the data's own range for the uniform (scores inside [0, 1] would otherwise get the lecture's [0, 1], and
    # rescaled ones their own range: not the same problem)
    lo, hi = float(data.value.min()), float(data.value.max())
    if hi > lo:
        kw.setdefault("score_range", (lo, hi))
    run = Run(data, GoodBadScores(**kw), "all_good", max_iter=200)
    run.run()
    return run


# ---------------------------------------------------------------------- the scores model on any scale
@pytest.mark.parametrize(("scale", "shift"), [(1e17, 0.0), (3e-200, 0.0), (1e300, -5e299), (-7.5, 3.0), (1e17, 1e18)])
def test_scores_model_is_scale_and_shift_invariant(scale, shift):
    """1e17-sized (or 1e-200-sized, or shifted) scores give exactly the rescaled problem's posteriors; the
    objective moves by the Jacobian -n log|scale| only."""
    v = base_scores()
    ref = fitted(scores(v))
    run = fitted(scores(v * scale + shift))
    assert run.violations == [] and ref.violations == []
    assert len(run.snapshots) == len(ref.snapshots)
    np.testing.assert_allclose(run.posterior, ref.posterior, atol=1e-7)
    want = np.array(ref.objective_history()) - v.size * np.log(abs(scale))
    np.testing.assert_allclose(run.objective_history(), want, rtol=1e-9, atol=1e-6)
    p, r = run.params, ref.params
    assert p.sigma == pytest.approx(r.sigma * abs(scale), rel=1e-6)
    np.testing.assert_allclose((p.mu - shift) / scale, r.mu, rtol=1e-6, atol=1e-9 * (1 + abs(shift / scale)))


def test_one_score_near_1e17_or_the_float_limit():
    """The issue's cases: one score about 1e17, one at 1e308, one distinct value 1e17: finite everything."""
    for outlier in (1e17, 1e308, -BIG, BIG):
        v = base_scores()
        v[3] = outlier
        run = fitted(scores(v))
        assert np.isfinite(run.objective_history()).all() and run.violations == []
        assert np.isfinite(run.params.mu).all() and 0 < run.params.sigma < np.inf
        assert run.params.mu[1] == pytest.approx(np.average(v[6:12], weights=run.posterior[:, 1]), rel=1e-6)
    run = fitted(scores(np.full(72, 1e17)))
    assert np.isfinite(run.objective_history()).all() and run.params.mu[0] == 1e17


def test_score_range_is_wide_enough_for_any_finite_value():
    for v in ([1e17, 1e17], [BIG, BIG], [-BIG, -BIG], [0.0, 5e-324], [3.0, 3.0], [-BIG, BIG]):
        lo, hi = score_range(np.array(v))
        assert np.isfinite(lo) and np.isfinite(hi) and hi / 2 - lo / 2 >= 1e-290
        assert lo <= min(v) and max(v) <= hi


@pytest.mark.parametrize("l2", [0.0, 1.0])
def test_raykar_features_on_any_scale(l2):
    """Features of size 1e300 (or 1e-300 without a prior) fit as their O(1) versions, weights rescaled."""
    from crowdlab.io.features import features_from_array
    from crowdlab.models.raykar import RaykarModel

    data = random_problem(np.random.default_rng(4), 30, 4, 2, "dense")
    X = np.random.default_rng(5).normal(size=(30, 2))
    runs = {}
    for scale in (1.0, 1e300, 1e-300, 1e17):
        feats = features_from_array(X * scale, data.item_names, add_intercept=True)
        run = Run(data, RaykarModel(feats, l2=l2), max_iter=40)
        run.run()
        assert run.violations == [] and np.isfinite(run.params.w).all()
        runs[scale] = run
    for scale in () if l2 else (1e300, 1e-300, 1e17):  # the L2 prior is not scale-free: finite is all we ask
        np.testing.assert_allclose(runs[scale].posterior, runs[1.0].posterior, atol=1e-6)
        np.testing.assert_allclose(runs[scale].params.w[1:] * scale, runs[1.0].params.w[1:], rtol=1e-5)


def test_hmm_log_space_pass_equals_the_scaled_one():
    from crowdlab.models.hmm import _log_forward_backward, emission_logs, forward_backward, layout
    from tests.unit.test_hmm import random_params, tiny_chains

    rng = np.random.default_rng(6)
    for _ in range(30):
        data = tiny_chains(rng, rng.integers(1, 6, size=rng.integers(1, 5)), 3, 3)
        p = random_params(rng, 3, 3)
        q, xi, ll, (first, xp) = forward_backward(data, p, pairs=True)
        lay = layout(data)
        q2, xi2, ll2, (first2, xp2) = _log_forward_backward(
            emission_logs(data, p.gamma)[lay.perm], p.pi, p.T, lay, True
        )
        o = np.argsort(first2)
        np.testing.assert_allclose(q2[lay.inv], q, atol=1e-12)
        np.testing.assert_allclose(xi2, xi, atol=1e-12)
        np.testing.assert_allclose(xp2[o], xp, atol=1e-12)
        assert ll2 == pytest.approx(ll, rel=1e-12) and np.array_equal(first2[o], first)


def test_hmm_with_deterministic_parameters_stays_finite():
    """pi0 = one-hot, T a permutation, every worker deterministic: the scaled pass meets 0/0; the log-space pass
    takes over (before: NaN posteriors)."""
    from crowdlab.models import HMMCrowd
    from crowdlab.models.hmm import HMMParams
    from tests.unit.test_hmm import tiny_chains

    rng = np.random.default_rng(7)
    data = tiny_chains(rng, [5, 3, 1], 2, 3, p_obs=0.9)
    params = HMMParams(pi=np.eye(3)[0], gamma=np.stack([np.eye(3)[:, [2, 0, 1]]] * 2), T=np.eye(3)[:, [1, 2, 0]])
    run = Run(data, HMMCrowd(), "params", params=params, max_iter=30)
    run.run()
    assert np.isfinite(run.objective_history()).all() and run.violations == []
    assert np.isfinite(run.posterior).all()


# ---------------------------------------------------------------------- the engine
def test_engine_stops_on_a_nan_with_a_model_error_naming_the_half_step():
    class Broken(DawidSkene):
        def m_step(self, data, q):
            p = super().m_step(data, q)
            if self.calls == 2:
                p = replace(p, pi=np.full_like(p.pi, np.nan))
            self.calls += 1
            return p

    model = Broken()
    model.calls = 0
    data = random_problem(np.random.default_rng(0), 30, 4, 3, "dense")
    run = Run(data, model)  # the start calls the M-step once
    run.step()
    n = len(run.snapshots)
    with pytest.raises(ModelError, match=r"M-step 4 \(iteration 2\).*parameter pi \(nan\)"):
        run.step()
    assert len(run.snapshots) == n + 1  # the E-step was kept, the bad M-step was not recorded
    assert run.current.kind == "E" and np.isfinite(run.current.objective)
    assert run.violations == []


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_engine_refuses_a_non_finite_start():
    class BadStart(DawidSkene):
        def m_step(self, data, q):
            p = super().m_step(data, q)
            return replace(p, gamma=p.gamma * np.inf)

    data = random_problem(np.random.default_rng(1), 10, 3, 2, "dense")
    with pytest.raises(ModelError, match="initialisation.*cannot start"):
        Run(data, BadStart())


# ---------------------------------------------------------------------- the MRF's edge weights
def test_mrf_refuses_penalties_beyond_float_and_names_the_edge():
    data = random_problem(np.random.default_rng(2), 6, 3, 2, "dense")
    A = sp.csr_matrix(([1.0, 1e308, 1.0], ([0, 1, 2], [1, 2, 3])), shape=(6, 6))
    data = replace(data, graph=(A + A.T).tocsr())
    for e_step in ("mean_field", "icm"):
        with pytest.raises(DataError, match=r"items 'i1' and 'i2' has weight 1e\+308"):
            Run(data, NetworkCrowd(e_step=e_step))
    # just below the limit: every number finite, mean-field EM still monotone
    A = sp.csr_matrix(([1.0, 1e295, 1.0], ([0, 1, 2], [1, 2, 3])), shape=(6, 6))
    run = Run(replace(data, graph=(A + A.T).tocsr()), NetworkCrowd(e_step="mean_field"), max_iter=20)
    run.run()
    assert np.isfinite(run.objective_history()).all() and run.violations == []
    json.loads(to_json(history_dict(run)))


# ---------------------------------------------------------------------- the writers
def test_to_json_refuses_nan_and_inf_naming_the_key():
    with pytest.raises(ModelError, match=r"'params.gamma\[1\]' is inf"):
        to_json({"params": {"gamma": [1.0, float("inf")]}})
    with pytest.raises(ModelError, match=r"'mu\[2\]' is nan"):
        to_json({"mu": np.array([0.0, 1.0, np.nan])})
    assert json.loads(to_json({"objective": None, "x": 1.5})) == {"objective": None, "x": 1.5}


def test_check_finite_frame_names_column_and_row():
    import pandas as pd

    df = pd.DataFrame({"item": ["a", "b"], "p_0": [0.5, np.nan]})
    with pytest.raises(ModelError, match=r"column 'p_0' is nan in the row of b"):
        check_finite_frame(df, "posteriors")


def test_majority_vote_history_writes_null_objective_not_nan():
    data = random_problem(np.random.default_rng(3), 10, 3, 2, "dense")
    h = json.loads(to_json(history_dict(Run(data, MajorityVote()))))
    assert h["snapshots"][0]["objective"] is None


@pytest.mark.parametrize("outlier", [1e308, -BIG])
def test_export_of_a_1e308_score_run_is_finite(outlier):
    v = base_scores()
    v[0] = outlier
    gold = np.linspace(0, 1, 12)
    gold[5] = 1e308
    run = fitted(scores(v, gold=gold))
    for d in (params_dict(run), history_dict(run), metrics_dict(run)):
        json.loads(to_json(d))  # json.loads rejects nothing; to_json would have raised on NaN/inf
    assert -1 <= metrics_dict(run)["pearson_r"] <= 1
    for frame in (posterior_frame(run), worker_frame(run)):
        assert np.isfinite(frame.select_dtypes("number").drop(columns="gold", errors="ignore").to_numpy()).all()


def test_cli_writes_finite_json_for_huge_scores(tmp_path, capsys):
    f = tmp_path / "scores.csv"
    rows = ["item,worker,score"] + [f"i{n},w{m},{0.1 * ((n + m) % 7)}" for n in range(8) for m in range(4)]
    rows[5] = "i1,w0,1e308"
    f.write_text("\n".join(rows) + "\n")
    with limits.override(max_abs_value=1.7e308):  # the reader refuses |score| > 1e12 by default
        assert main(["fit", str(f), "--method", "scores", "--out", str(tmp_path / "out")]) == 0
    for name in ("params.json", "history.json"):
        text = (tmp_path / "out" / name).read_text()
        assert "NaN" not in text and "Infinity" not in text and "null" not in text.replace('"objective": null', "")
        json.loads(text)


# ---------------------------------------------------------------------- pictures and summaries
def test_score_histogram_and_correlation_with_1e308():
    for v in ([1e308, -1e308, 0.5], [1e17] * 5, [BIG] * 3, [-BIG, BIG], [5e-324, 0.0]):
        fig = score_histogram(np.array(v), gold=np.array([0.1, np.nan]))
        bars = fig.data[0]
        assert np.isfinite(np.asarray(bars.x, float)).all() and np.isfinite(bars.width) and bars.width > 0
        assert sum(bars.y) == pytest.approx(1.0)
        fig.to_json()
    v = base_scores()
    big = scores(v * 1e308)
    _, r, _ = score_correlation(big)
    _, r0, _ = score_correlation(scores(v))
    np.testing.assert_allclose(r, r0, atol=1e-9)


def test_pearson_with_huge_values():
    x = np.array([1.0, 2.0, 4.0])
    assert pearson(x / 4 * 1e308, x) == pytest.approx(1.0)
    assert pearson(-x * 1e300, x * 1e-300) == pytest.approx(-1.0)
