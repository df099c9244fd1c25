"""Data pictures, method comparison, sweeps, the step explanations and the likelihood surface."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.analysis import compare, surface, sweep
from crowdlab.io import describe
from crowdlab.models import DawidSkene, OneCoin, TwoCoin
from crowdlab.teaching import explain
from crowdlab.teaching.simulate import simulate_crowd, simulate_scores
from tests.unit.problems import random_problem


def test_worker_agreement_equals_pairwise_count():
    data = random_problem(np.random.default_rng(4), 30, 6, 3, "repeats")
    workers, agree, shared = describe.worker_agreement(data, limit=4)
    assert list(workers) == list(describe.top_workers(data, 4))
    for a, b in itertools.product(range(4), repeat=2):
        same = tot = 0
        for i, j in itertools.product(range(data.n_obs), repeat=2):
            if data.worker[i] == workers[a] and data.worker[j] == workers[b] and data.item[i] == data.item[j]:
                tot += 1
                same += data.label[i] == data.label[j]
        assert shared[a, b] == tot
        if tot:
            assert agree[a, b] == pytest.approx(same / tot)


def test_class_balance_and_worker_table(bluebirds):
    bal = describe.class_balance(bluebirds)
    assert bal["labels"].sum() == bluebirds.n_obs and bal["gold"].sum() == 108
    wt = describe.worker_table(bluebirds)
    assert wt["labels"].sum() == bluebirds.n_obs
    np.testing.assert_allclose(wt.filter(like="share").sum(axis=1), 1.0)


def test_compare_methods_table_agreement_and_disagreements(bluebirds):
    c = compare.compare_methods(bluebirds)
    assert list(c.table["method"]) == [cl.MODELS[k].info.title for k in cl.applicable_models(bluebirds)]
    ds = c.table.set_index("method").loc["Dawid-Skene"]
    assert ds["accuracy"] == pytest.approx(97 / 108)
    A = c.agreement.to_numpy()
    np.testing.assert_allclose(A, A.T)
    np.testing.assert_allclose(np.diag(A), 1.0)
    labels = np.stack([r.labels() for r in c.runs.values()])
    assert len(c.disagreements) == int((labels != labels[0]).any(axis=0).sum())
    kinds = c.table.set_index("method")["kind"]
    for key in c.runs:
        want = (
            "baseline (not EM)" if key == "mv" else "variational Bayes" if key in ("ibcc", "mace_vb", "ebcc") else "EM"
        )
        assert kinds[cl.MODELS[key].info.title] == want


def test_compare_on_scores_has_the_plain_mean_baseline():
    sim = simulate_scores(30, 4, 3, seed=2)
    c = compare.compare_methods(sim.annotations)
    assert list(c.table["method"]) == ["Mean of the scores", "Good/bad annotators (scores)"]
    r = c.table["pearson r"].to_numpy()
    assert r[1] > r[0]


def test_label_optima_groups_equal_objectives():
    ids = sweep.label_optima(np.array([-10.0, -12.0, -10.0 + 1e-9, -11.0]))
    assert list(ids) == [0, 2, 0, 1]


def test_class_permutation_detects_a_mirror():
    ref = np.array([0, 1, 2, 2, 1, 0])
    perm = sweep.class_permutation((ref + 1) % 3, ref, 3)
    assert list(perm[(ref + 1) % 3]) == list(ref)


def test_restarts_find_the_mirror_image_of_bluebirds(bluebirds):
    table = sweep.restarts(bluebirds, "ds", n_random=4)
    assert len(table) == 6 and table["optimum"].min() == 0
    best = table[table["optimum"] == 0]
    # the mirror image has the same objective but inverted labels
    assert best["relabelled"].any() and (~best["relabelled"]).any()
    assert best.loc[best["relabelled"], "accuracy"].max() < 0.2
    assert best.loc[~best["relabelled"], "accuracy"].min() > 0.89


def test_restarts_can_be_stopped_and_report_progress(bluebirds):
    seen = []
    table = sweep.restarts(
        bluebirds,
        "one_coin",
        n_random=5,
        progress=lambda i, n, s: seen.append((i, n)),
        should_stop=lambda: len(seen) >= 3,
    )
    assert len(table) == 3 and seen[0] == (0, 7)


def test_prior_sweep_shrinks_worker_accuracy_towards_chance(bluebirds):
    t = sweep.prior_sweep(bluebirds, "ds", [0.0, 5.0, 50.0])
    acc = t["mean worker accuracy"].to_numpy()
    assert acc[0] > acc[1] > acc[2] > 0.5


# ------------------------------------------------------------------ explanations show the model's own numbers
def test_e_step_explanation_ends_with_the_models_posterior(bluebirds):
    run = cl.fit(bluebirds, "ds")
    lines = explain.e_step_classes(bluebirds, run.params, 5)
    q = DawidSkene().e_step(bluebirds, run.params)[5]
    assert lines[-1].endswith("(" + ",\\ ".join(explain._f(v) for v in q) + ")")
    assert any("34 more" in line or "35 more" in line for line in lines)


def test_m_step_explanation_matches_m_step(bluebirds):
    run = cl.fit(bluebirds, "two_coin")
    lines = explain.m_step_classes(bluebirds, run.posterior, 2, "two_coin")
    p = TwoCoin().m_step(bluebirds, run.posterior)
    assert f"= {p.extra['alpha'][2]:.3g}" in lines[-1] and f"= {p.extra['beta'][2]:.3g}" in lines[-1]
    one = cl.fit(bluebirds, "one_coin")
    line = explain.m_step_classes(bluebirds, one.posterior, 2, "one_coin")[-1]
    assert line.endswith(f"= {OneCoin().m_step(bluebirds, one.posterior).extra['theta'][2]:.3g}")


def test_scores_explanations_match_the_model():
    sim = simulate_scores(10, 3, 2, seed=1)
    run = cl.fit(sim.annotations, "scores")
    w = run.model.e_step(sim.annotations, run.params)[0, 1]
    assert explain.e_step_scores(sim.annotations, run.params, 0)[-1].endswith(explain._f(w))
    new = run.model.m_step(sim.annotations, run.posterior)
    lines = explain.m_step_scores(sim.annotations, run.posterior, 3)
    assert any(x.startswith(r"\Rightarrow\ \mu_i") and x.endswith(explain.num(new.mu[3], 4)) for x in lines)
    assert lines[-1].endswith(explain.num(new.pi_good, 4))


def test_names_with_latex_characters_are_escaped():
    data = cl.Annotations.from_labels(["a_1", "b&2", "a_1"], ["w{1}", "w%2", "w%2"], ["x", "y", "x"])
    run = cl.fit(data, "ds")
    text = " ".join(explain.e_step_classes(data, run.params, 0) + explain.m_step_classes(data, run.posterior, 1))
    assert "item a\\_1" in text and "worker w\\{1\\}" in text and "w{1}" not in text


# ------------------------------------------------------------------ surface
def test_surface_value_at_current_params_is_the_objective(bluebirds):
    run = cl.fit(bluebirds, "two_coin")
    x, y = surface.Coord("alpha", 3), surface.Coord("beta", 3)
    same = surface.with_value(run.model, run.params, {x: surface.get_value(run.model, run.params, x)})
    np.testing.assert_allclose(same.gamma, run.params.gamma)
    xs, ys, Z = surface.objective_surface(bluebirds, run.model, run.params, x, y, n=5, lo=0.1, hi=0.9)
    p = surface.with_value(run.model, run.params, {x: xs[1], y: ys[3]})
    assert Z[3, 1] == pytest.approx(run.model.log_likelihood(bluebirds, p))


def test_converged_em_sits_at_the_top_of_the_slice():
    sim = simulate_crowd(600, 8, 2, labels_per_item=5, seed=5)
    run = cl.fit(sim.annotations, "two_coin", tol=1e-12, accelerate=False)  # one path point per EM step
    x, y = surface.Coord("alpha", 1), surface.Coord("beta", 1)
    xs, ys, Z = surface.objective_surface(sim.annotations, run.model, run.params, x, y, n=81)
    iy, ix = np.unravel_index(Z.argmax(), Z.shape)
    step = xs[1] - xs[0]
    px, py, idx = surface.em_path(run, x, y)
    assert abs(xs[ix] - px[-1]) <= step and abs(ys[iy] - py[-1]) <= step
    assert len(px) == run.last.iteration + 1 and idx[0] == 0


def test_surface_coordinates():
    assert len(surface.coords_for("two_coin", 3)) == 7 and len(surface.coords_for("one_coin", 3)) == 4
    assert len(surface.coords_for("ds", 3)) == 7 and len(surface.coords_for("scores", 3, 10)) == 12
    with pytest.raises(ValueError):
        surface.coords_for("mv", 3)


@pytest.mark.parametrize(
    "method,coords",
    [
        ("two_coin", (("alpha", 2), ("beta", 2))),
        ("two_coin", (("alpha", 1), ("beta", 5))),
        ("two_coin", (("p", -1), ("alpha", 0))),
        ("one_coin", (("theta", 0), ("theta", 3))),
        ("one_coin", (("theta", 4), ("p", -1))),
    ],
)
def test_vectorised_surface_equals_pointwise_likelihood(bluebirds, method, coords):
    run = cl.fit(bluebirds, method, prior=0.5)
    x, y = (surface.Coord(*c) for c in coords)
    xs, ys, Z = surface.objective_surface(bluebirds, run.model, run.params, x, y, n=6)
    for iy in (0, 3, 5):
        for ix in (0, 2, 5):
            p = surface.with_value(run.model, run.params, {x: xs[ix], y: ys[iy]})
            assert Z[iy, ix] == pytest.approx(run.model.log_likelihood(bluebirds, p), rel=1e-12, abs=1e-8)


def test_every_model_with_a_prior_strength_says_what_it_pulls_towards():
    """The Step page's help and the Priors page's caption read ``ModelInfo.prior_pull``; one sentence for all
    models said one-coin's prior pulled confusion matrices towards uniform (its Beta(1 + s, 1 + s) pulls each
    accuracy towards 0.5: at K = 3 and s = 1000 the diagonal is 0.50-0.52, not 1/3)."""
    import inspect

    from crowdlab.models import MODELS

    with_prior = [k for k, c in MODELS.items() if "prior" in inspect.signature(c.__init__).parameters]
    assert {"ds", "one_coin", "glad", "mace", "ibcc", "scores", "hmm", "mrf"} <= set(with_prior)
    assert [k for k in with_prior if not MODELS[k].info.prior_pull] == []
    sim = simulate_crowd(n_items=200, n_workers=6, n_classes=3, labels_per_item=4, seed=1)
    diag = np.diagonal(cl.fit(sim.annotations, "one_coin", prior=1000.0).params.gamma, axis1=1, axis2=2)
    assert np.all(np.abs(diag - 0.5) < 0.05)
    assert "towards 0.5" in MODELS["one_coin"].info.prior_pull


@pytest.mark.parametrize("method", ["one_coin", "glad"])
def test_models_that_spread_errors_over_k_minus_1_classes_refuse_one_class(method):
    """One-coin's and GLAD's (1 - theta) / (K - 1) divided by zero on one class: "the initialisation gave
    non-finite values ... Rescale extreme inputs (scores, edge weights)", which did not say what was wrong."""
    from crowdlab.io.data import Annotations

    d = Annotations(
        item=np.array([0, 0, 1, 1, 2]),
        worker=np.array([0, 1, 0, 1, 0]),
        label=np.zeros(5, int),
        item_names=("1", "2", "3"),
        worker_names=("a", "b"),
        class_names=("x",),
    )
    with pytest.raises(cl.ModelError, match="needs at least two classes; this dataset has 1"):
        cl.fit(d, method)
    assert cl.fit(d, "ds").labels().tolist() == [0, 0, 0]
    assert issubclass(cl.NotFittedError, AttributeError)


def test_a_start_from_another_models_posterior_can_be_named(bluebirds):
    q = cl.fit(bluebirds, "ds").posterior
    run = cl.Run(bluebirds, cl.make_model("one_coin"), "posterior", q0=q, q0_name="Dawid-Skene's posterior")
    assert run.start_description == "Dawid-Skene's posterior"
    run.step()
    run.reset()
    assert run.start_description == "Dawid-Skene's posterior"
    assert cl.Run(bluebirds, cl.make_model("one_coin"), "posterior", q0=q).start_description == "Another model's result"
