"""Fisher information (Donmez et al. 2010, Sec. 5): eq. (24) vs enumeration, simulation; observed information vs finite
differences of model.log_likelihood; coverage of the per-worker Wald intervals."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from crowdlab.analysis import fisher, risk
from crowdlab.engines.fit import fit
from crowdlab.engines.run import Run
from crowdlab.errors import ModelError
from crowdlab.models import DawidSkene, GoodBadScores, MajorityVote, OneCoin, TwoCoin
from crowdlab.teaching.simulate import simulate_crowd, simulate_scores


# ---------------------------------------------------------------------- expected information
def test_eq24_equals_expected_squared_score_by_enumeration():
    thetas = np.r_[np.linspace(0.02, 0.98, 13), 1.0 - 1e-9]
    for alpha in (0.1, 0.3, 0.45, 0.62, 0.8, 0.95):
        J = fisher.fisher_symmetric(thetas, alpha)
        for t, j in zip(thetas, J):
            enum = fisher.fisher_enumerate(lambda th, a=alpha: fisher.symmetric_outcome_probs(th, a), [t])[0, 0]
            # and E[score^2] written out: score = +-(2 alpha - 1) / p(out)
            p1 = t * (2 * alpha - 1) + 1 - alpha
            direct = p1 * ((2 * alpha - 1) / p1) ** 2 + (1 - p1) * ((2 * alpha - 1) / (1 - p1)) ** 2
            assert enum == pytest.approx(j, rel=1e-8)
            assert direct == pytest.approx(j, rel=1e-8)


def test_printed_eq24_is_the_information_only_at_one_half_and_one():
    for alpha in (0.2, 0.7, 0.9):
        for t in (0.5, 1.0):
            assert fisher.fisher_symmetric_printed(t, alpha) == pytest.approx(
                fisher.fisher_symmetric(t, alpha), rel=1e-12
            )
    assert fisher.fisher_symmetric_printed(0.7, 0.8) == pytest.approx(1.2484, abs=1e-3)
    assert fisher.fisher_symmetric(0.7, 0.8) == pytest.approx(1.5280, abs=1e-3)
    grid = fisher.fisher_symmetric(np.linspace(0, 1, 5)[:, None], np.array([0.2, 0.7])[None, :])
    assert grid.shape == (5, 2)


@pytest.mark.parametrize(("theta", "alpha"), [(0.7, 0.8), (0.85, 0.3), (0.6, 0.9)])
def test_variance_of_eq9_is_inverse_fisher(theta, alpha):
    n, reps = 2000, 2000
    out, _ = risk.simulate_classifier_outputs(n * reps, [theta], alpha, seed=0)
    m = (out[:, 0].reshape(reps, n) == 1).sum(axis=1)
    est = np.clip(risk.closed_form_theta(m, n, alpha), 0.0, 1.0)
    ratio = est.var() * n * fisher.fisher_symmetric(theta, alpha)
    assert abs(ratio - 1) < 0.10
    if (theta, alpha) == (0.7, 0.8):  # the printed eq. (24) is off by ~22% here, and the simulation sees it
        assert abs(est.var() * n * fisher.fisher_symmetric_printed(theta, alpha) - 1) > 0.10


def test_fisher_enumerate_complex_step_equals_central_differences():
    p = np.array([0.5, 0.3, 0.2])
    theta = np.array([0.8, 0.6, 0.7])
    J_c = fisher.fisher_enumerate(lambda t: fisher.symmetric_outcome_probs(t, p), theta)
    J_d = fisher.fisher_enumerate(lambda t: fisher.symmetric_outcome_probs(t, p), theta, method="central")
    np.testing.assert_allclose(J_c, J_d, rtol=1e-6)
    np.testing.assert_allclose(J_c, J_c.T, rtol=1e-12)
    assert np.linalg.eigvalsh(J_c).min() > 0


def test_collaboration_adds_information():
    """Fig. 6: the collaborative estimate of theta_j is at least as precise as the classifier-alone one."""
    theta = np.array([0.75, 0.75, 0.75, 0.75])
    J = fisher.fisher_collaborative(theta, 0.75)
    effective = 1.0 / np.diag(np.linalg.inv(J))
    alone = fisher.fisher_symmetric(theta, 0.75)
    assert np.all(effective > alone * 1.5)


def test_lemma6_single_population_fisher_is_singular_two_populations_are_not():
    def probs(t, a):
        p0 = a * t[0] + (1 - a) * (1 - t[1])
        return np.array([p0, 1 - p0])

    J_a = fisher.fisher_enumerate(lambda t: probs(t, 0.8), [0.85, 0.7])
    J_b = fisher.fisher_enumerate(lambda t: probs(t, 0.3), [0.85, 0.7])
    assert np.linalg.eigvalsh(J_a)[0] < 1e-10 * np.linalg.eigvalsh(J_a)[1]
    # the null direction is Lemma 6's flat line: d theta22 / d theta11 = p1 / p2
    null = np.linalg.eigh(J_a)[1][:, 0]
    assert null[1] / null[0] == pytest.approx(0.8 / 0.2, rel=1e-8)
    assert np.linalg.eigvalsh(J_a + J_b)[0] > 0.1


# ---------------------------------------------------------------------- observed information
def _fd_hessian(f, x, rel=1e-3):
    """Central second differences with one Richardson step (error O(h^4)); steps relative to min(x, 1 - x)."""

    def hess(h):
        r = x.size
        H = np.empty((r, r))
        for a in range(r):
            for b in range(a, r):
                ea = np.zeros(r)
                eb = np.zeros(r)
                ea[a], eb[b] = h[a], h[b]
                H[a, b] = H[b, a] = (f(x + ea + eb) - f(x + ea - eb) - f(x - ea + eb) + f(x - ea - eb)) / (
                    4 * h[a] * h[b]
                )
        return H

    h = rel * np.minimum(x, 1 - x)
    return (4 * hess(h / 2) - hess(h)) / 3


CASES = [
    ("ds", 3, DawidSkene()),
    ("ds-map", 3, DawidSkene(prior=1.0)),
    ("one-coin", 3, OneCoin()),
    ("one-coin-map", 3, OneCoin(prior=0.5)),
    ("one-coin-known-pi", 3, OneCoin(class_prior=[0.5, 0.3, 0.2])),
    ("two-coin", 2, TwoCoin()),
    ("two-coin-map", 2, TwoCoin(prior=1.0, alpha_prior=(3.0, 2.0))),
]


@pytest.mark.parametrize(("name", "K", "model"), CASES, ids=[c[0] for c in CASES])
def test_observed_information_equals_finite_difference_hessian(name, K, model):
    sim = simulate_crowd(120, 4, K, labels_per_item=4, class_prior=[0.5, 0.3, 0.2][:K] if K == 3 else [0.6, 0.4],
                         expert_accuracy=(0.7, 0.9), seed=5)  # fmt: skip
    data = sim.annotations
    run = Run(data, model)
    run.run(tol=1e-13, max_iter=20_000)
    info = fisher.observed_information(model, data, run.params)
    assert info.block == "full" and not info.singular
    H = _fd_hessian(lambda phi: model.log_likelihood(data, info.params_at(phi)), info.phi)
    scale = np.abs(info.information).max()
    assert np.abs(-H - info.information).max() <= 1e-5 * scale
    # at the (MAP) estimate the analytic gradient vanishes: Newton decrement ~ 0
    assert float(info.gradient @ info.covariance @ info.gradient) < 1e-6
    assert np.all(np.isfinite(info.se()))


def test_observed_information_gradient_is_the_score_away_from_the_maximum():
    sim = simulate_crowd(100, 3, 3, labels_per_item=3, seed=2)
    model = DawidSkene()
    run = Run(sim.annotations, model)
    run.step()
    info = fisher.observed_information(model, sim.annotations, run.params)
    f = lambda phi: model.log_likelihood(sim.annotations, info.params_at(phi))  # noqa: E731
    h = 1e-6
    fd = np.array([(f(info.phi + h * e) - f(info.phi - h * e)) / (2 * h) for e in np.eye(info.phi.size)])
    np.testing.assert_allclose(info.gradient, fd, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    ("method", "prior", "repeat"), [("ds", 0.0, False), ("ds", 1.0, True), ("one_coin", 0.0, False)]
)
def test_worker_blocks_are_the_diagonal_blocks_of_the_full_information(method, prior, repeat):
    """The per-worker blocks (all computed at once, without a loop over the workers) are exactly the full
    information's diagonal blocks, with a prior and with repeated (item, worker) labels too."""
    sim = simulate_crowd(150, 7, 3, labels_per_item=4, seed=11)
    data = sim.annotations
    if repeat:  # worker 0 labels its first ten items a second time
        first = np.flatnonzero(data.worker == 0)[:10]
        data = replace(
            data,
            item=np.r_[data.item, data.item[first]],
            worker=np.r_[data.worker, data.worker[first]],
            label=np.r_[data.label, (data.label[first] + 1) % 3],
        )
    run = fit(data, method, prior=prior)
    full = fisher.observed_information(run.model, data, run.params, block="full")
    blocks = fisher.observed_information(run.model, data, run.params, block="worker")
    assert full.information.shape == blocks.information.shape and full.names == blocks.names
    dense = blocks.information.toarray()
    same = full.worker[:, None] == full.worker[None, :]  # parameters of one worker (or both of the class prior)
    np.testing.assert_allclose(dense[same], full.information[same], rtol=1e-12, atol=1e-9)
    assert np.all(dense[~same] == 0)


def test_worker_blocks_give_smaller_standard_errors():
    sim = simulate_crowd(400, 6, 3, labels_per_item=3, seed=4)
    run = fit(sim.annotations, "ds")
    full = fisher.worker_intervals(run, what="native", block="full")
    blocks = fisher.worker_intervals(run, what="native", block="worker")
    assert blocks.attrs["block"] == "worker" and any("too small" in n for n in blocks.attrs["notes"])
    ok = full.note == ""
    assert np.all(blocks.se[ok] <= full.se[ok] * (1 + 1e-9))
    assert (blocks.se[ok] < full.se[ok] * 0.999).any()


# ---------------------------------------------------------------------- intervals
def test_worker_intervals_cover_the_truth():
    """200 seeded Dawid-Skene crowds: the 95% intervals for worker accuracy cover the truth 90-99% of the time."""
    hits = []
    for rep in range(200):
        sim = simulate_crowd(300, 5, 2, labels_per_item=5, class_prior=[0.6, 0.4], expert_accuracy=(0.7, 0.9),
                             seed=1000 + rep)  # fmt: skip
        df = fisher.worker_intervals(fit(sim.annotations, "ds"))
        truth = np.diagonal(sim.gamma, axis1=1, axis2=2) @ sim.pi
        hits.append((df.lower.to_numpy() <= truth) & (truth <= df.upper.to_numpy()))
    coverage = float(np.mean(hits))
    assert 0.90 <= coverage <= 0.99, coverage


def test_worker_intervals_table():
    sim = simulate_crowd(300, 5, 2, labels_per_item=4, seed=3)
    run = fit(sim.annotations, "two_coin")
    df = fisher.worker_intervals(run, what="all")
    assert list(df.columns) == ["worker", "parameter", "estimate", "se", "lower", "upper", "n_labels", "note"]
    assert set(df.parameter) == {"alpha (sensitivity)", "beta (specificity)", "accuracy"}
    assert len(df) == 15
    assert np.all(np.isfinite(df[["estimate", "se", "lower", "upper"]].to_numpy()))
    assert np.all((df.lower <= df.estimate) & (df.estimate <= df.upper))
    assert np.all((df.lower >= 0) & (df.upper <= 1))
    acc = df[df.parameter == "accuracy"]
    np.testing.assert_allclose(acc.estimate, run.params.worker_accuracy())
    np.testing.assert_array_equal(acc.n_labels, sim.annotations.labels_per_worker)
    # the same from (model, data, params); the logit interval is asymmetric but holds the estimate
    same = fisher.worker_intervals(run.model, sim.annotations, run.params, what="all")
    np.testing.assert_allclose(same.se, df.se)
    lg = fisher.worker_intervals(run, scale="logit")
    assert np.all((lg.lower < lg.estimate) & (lg.estimate < lg.upper) & (lg.lower > 0) & (lg.upper < 1))


def test_a_worker_with_an_unlabelled_confusion_column_gets_the_exact_interval():
    # dogs: worker 38 has 1 label, so three of its four confusion columns are set by the M-step's rule for empty
    # columns; the delta method gave its accuracy 0.32 the interval [0.294, 0.346]
    from crowdlab.io.samples import load_sample

    data = load_sample("dogs")
    run = fit(data, "ds")
    df = fisher.worker_intervals(run)
    columns = fisher.observed_information(run.model, data, run.params).expected_counts.sum(axis=1)
    thin = (columns < 1.0).any(axis=1)
    assert 20 < thin.sum() < data.n_workers
    notes = df["note"].to_numpy()
    assert all("less than one expected label" in n or "boundary" in n for n in notes[thin])
    assert not any("less than one expected label" in n for n in notes[~thin])
    one = int(np.flatnonzero(data.labels_per_worker == 1)[0])
    row = df.iloc[one]
    assert row.upper - row.lower > 0.9 and row.lower <= row.estimate <= row.upper
    # well-labelled workers keep their Wald interval, and every interval holds its estimate
    assert (notes == "").sum() > 60
    assert ((df.lower <= df.estimate + 1e-12) & (df.estimate <= df.upper + 1e-12)).all()


def test_boundary_estimates_get_a_note_not_nan():
    # worker 0 is always right, so its one-coin accuracy is exactly 1
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 200)
    items = np.repeat(np.arange(200), 3)
    workers = np.tile(np.arange(3), 200)
    right = rng.random(600) < np.tile([1.0, 0.8, 0.75], 200)
    labels = np.where(right, truth[items], 1 - truth[items])
    from crowdlab.io.data import Annotations

    data = Annotations(items, workers, labels, [str(i) for i in range(200)], ["a", "b", "c"], ["0", "1"])
    run = fit(data, "one_coin")
    assert run.params.extra["theta"][0] > 1 - 1e-6
    df = fisher.worker_intervals(run)
    row = df.iloc[0]
    assert "boundary" in row.note and row.upper == 1.0 and 0.9 < row.lower < 1.0
    assert np.all(np.isfinite(df[["estimate", "se", "lower", "upper"]].to_numpy()))
    assert any("boundary" in n for n in df.attrs["notes"])


def test_singular_information_is_flagged():
    # Dawid-Skene with two binary workers: 5 parameters, 3 degrees of freedom in the 4 answer patterns
    sim = simulate_crowd(500, 2, 2, labels_per_item=2, expert_accuracy=(0.7, 0.9), seed=1)
    model = DawidSkene()
    run = Run(sim.annotations, model)
    run.run()
    info = fisher.observed_information(model, sim.annotations, run.params)
    assert info.phi.size == 5 and not info.fixed
    assert info.singular and any("singular" in n for n in info.notes)
    lam = np.linalg.eigvalsh(info.information)
    assert np.sum(np.abs(lam) < 1e-3 * lam.max()) == 2
    df = fisher.worker_intervals(run)
    assert np.all(np.isfinite(df[["estimate", "se", "lower", "upper"]].to_numpy()))
    assert any("singular" in n for n in df.attrs["notes"])


def test_hard_em_and_unsupported_models():
    sim = simulate_crowd(100, 4, 2, seed=1)
    run = fit(sim.annotations, "ds", hard=True)
    assert any("hard EM" in n for n in fisher.worker_intervals(run).attrs["notes"])
    with pytest.raises(ModelError, match="Dawid-Skene, one-coin, two-coin and the good/bad scores"):
        fisher.observed_information(MajorityVote(), sim.annotations, run.params)
    scores = simulate_scores(seed=0).annotations
    with pytest.raises(ModelError, match="ScoreParams"):
        fisher.observed_information(GoodBadScores(), scores, None)


@pytest.mark.parametrize("design", ["dense", "sparse", "single", "unanimous", "deterministic", "repeats"])
def test_awkward_designs_give_finite_tables(design):
    from tests.unit.problems import random_problem

    rng = np.random.default_rng(len(design))
    for method, K in (("ds", 3), ("one_coin", 3), ("two_coin", 2)):
        data = random_problem(rng, 40, 4, K, design)
        run = fit(data, method)
        for what in ("accuracy", "all"):
            df = fisher.worker_intervals(run, what=what)
            vals = df[["estimate", "se", "lower", "upper"]].to_numpy()
            assert np.all(np.isfinite(vals)), (method, design)
            assert np.all((df.lower <= df.estimate + 1e-12) & (df.estimate <= df.upper + 1e-12))


# ------------------------------------------------------- the good/bad scores model (the EM lecture)
@pytest.mark.parametrize("prior", [0.0, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 3])
def test_scores_observed_information_equals_finite_difference_hessian(seed, prior):
    data = simulate_scores(8, 3, 2, seed=seed).annotations
    model = GoodBadScores(prior=prior)
    run = Run(data, model, "all_good")
    run.run(tol=1e-13, max_iter=20_000)
    # at the maximum (w_a near 0 / 1) and away from it (w_a in between: the Var_q term matters)
    for at_max, params in ((True, run.params), (False, replace(run.params, sigma=0.3, pi_good=0.55))):
        info = fisher.observed_information(model, data, params)
        assert info.phi.size == 10 and not info.fixed and info.singular != at_max  # indefinite away from it
        assert info.names[-2:] == ("sigma", "pi_good")
        f = lambda phi, info=info: model.log_likelihood(data, info.params_at(phi))  # noqa: E731
        H = _fd_hessian(f, info.phi)
        assert np.abs(-H - info.information).max() <= 1e-5 * np.abs(info.information).max()
        h = 1e-6
        fd = np.array([(f(info.phi + h * e) - f(info.phi - h * e)) / (2 * h) for e in np.eye(info.phi.size)])
        np.testing.assert_allclose(info.gradient, fd, rtol=1e-5, atol=1e-4)
    w = info.expected_counts[:, 1]
    assert ((w > 0.05) & (w < 0.95)).any()


def test_scores_boundary_parameters_are_held_fixed():
    data = simulate_scores(8, 3, 2, seed=0).annotations
    model = GoodBadScores(sigma_min=0.2)
    run = Run(data, model, "all_good")
    run.run()
    assert run.params.sigma == 0.2
    info = fisher.observed_information(model, data, replace(run.params, pi_good=1.0))
    assert info.fixed == ("sigma", "pi_good") and info.phi.size == 8
    assert any("floor" in n for n in info.notes) and any("boundary" in n for n in info.notes)
    df = fisher.worker_intervals(model, data, replace(run.params, pi_good=1.0))
    assert np.all(np.isfinite(df[["estimate", "se", "lower", "upper"]].to_numpy()))
    sig, pig = df.iloc[-2], df.iloc[-1]
    assert sig.lower == sig.upper == 0.2 and "floor" in sig.note
    assert pig.upper == 1.0 and 0 < pig.lower < 1 and "boundary" in pig.note


def test_scores_interval_table():
    sim = simulate_scores(30, 5, 2, sigma=0.1, seed=2)
    run = fit(sim.annotations, "scores", init="all_good")
    df = fisher.worker_intervals(run)  # "accuracy" maps to the native rows: the model has no per-worker accuracy
    assert list(df.columns) == ["worker", "parameter", "estimate", "se", "lower", "upper", "n_labels", "note"]
    assert list(df.parameter) == ["mu"] * 30 + ["sigma", "pi_good"]
    assert list(df.worker[:30]) == list(sim.annotations.item_names)
    assert df.attrs["kind"] == "scores"
    np.testing.assert_allclose(df.estimate[:30], run.params.mu)
    np.testing.assert_array_equal(df.n_labels[:30], sim.annotations.labels_per_item)
    assert np.all((df.lower <= df.estimate) & (df.estimate <= df.upper) & (df.se > 0))
    assert np.all((df.lower[:30] >= 0) & (df.upper[:30] <= 1)) and 0 <= df.lower.iloc[-1] <= df.upper.iloc[-1] <= 1
    native = fisher.worker_intervals(run, what="native")
    np.testing.assert_allclose(native.se, df.se)
    lg = fisher.worker_intervals(run, scale="logit")
    np.testing.assert_allclose(lg.lower[:30], df.lower[:30])
    assert np.all(lg.lower.iloc[-2:] < lg.estimate.iloc[-2:]) and np.all(lg.estimate.iloc[-2:] < lg.upper.iloc[-2:])


def test_scores_mean_intervals_cover_the_truth():
    """200 seeded runs of the lecture's simulation: the 95% intervals of the item means cover the true means
    90-99% of the time (over all 40 items of the runs where EM found the true good annotators)."""
    hits, skipped = [], 0
    for rep in range(200):
        sim = simulate_scores(40, 6, 3, sigma=0.1, seed=rep)
        run = fit(sim.annotations, "scores", init="all_good")
        if not np.array_equal(run.posterior[:, 1] > 0.5, sim.good):
            skipped += 1
            continue
        mu = fisher.worker_intervals(run, what="native").iloc[:40]
        hits.append((mu.lower.to_numpy() <= sim.true_means) & (sim.true_means <= mu.upper.to_numpy()))
    assert skipped < 20, skipped
    coverage = float(np.mean(hits))
    assert 0.90 <= coverage <= 0.99, coverage


# ---------------------------------------------------------------------- MACE
def _mace_objective_of_worker(run, j):
    """f(u): MACE's MAP objective (log p(x | theta, xi) + log prior, every other parameter at its estimate) as a
    function of worker j's free coordinates u = (theta_j, xi_j1 .. xi_j(K-1))."""
    model, data, p = run.model, run.data, run.params

    def f(u):
        theta, xi = p.theta.copy(), p.xi.copy()
        theta[j] = u[0]
        xi[j, 1:] = u[1:]
        xi[j, 0] = 1.0 - u[1:].sum()
        q = model.params_from(p.pi, theta, xi)
        return model.objective(data, None, q)

    return f


def _relabelled_twice(data, n: int, seed: int = 0):
    """``data`` with its first ``n`` labels given again by the same workers, half of them with another answer."""
    from crowdlab.io.data import Annotations

    rng = np.random.default_rng(seed)
    idx = np.arange(n)
    again = np.where(rng.random(n) < 0.5, data.label[idx], (data.label[idx] + 1) % data.n_classes)
    items, workers, labels = (np.r_[x, y] for x, y in ((data.item, data.item[idx]), (data.worker, data.worker[idx]),
                                                          (data.label, again)))  # fmt: skip
    names = (data.item_names, data.worker_names, data.class_names)
    return Annotations.from_labels(*([n_[i] for i in v] for n_, v in zip(names, (items, workers, labels))))


@pytest.mark.parametrize(("K", "twice"), [(2, 0), (3, 0), (3, 60)])
def test_mace_intervals_equal_a_finite_difference_hessian_of_the_objective(K, twice):
    """The information of one MACE worker's theta and xi (Louis' identity over its (worker, item) pairs) is minus
    the finite-difference Hessian of the whole MAP objective in those coordinates (the rest held fixed), also for
    workers who labelled items twice, and its score there is 0 (a MAP fixed point); the standard errors of the
    accuracy and of P(spamming) follow by the delta method (checked the same way)."""
    data = simulate_crowd(200, 5, K, labels_per_item=4, seed=7).annotations
    if twice:
        data = _relabelled_twice(data, twice)
        pairs = data.worker.astype(np.int64) * data.n_items + data.item
        assert np.unique(pairs).size < data.n_obs  # repeated (worker, item) pairs are there
    run = fit(data, "mace", tol=1e-13, max_iter=20000)
    df = fisher.mace_worker_intervals(run.model, run.data, run.params)
    p, pi, h = run.params, run.params.pi, 1e-4
    for j in range(run.data.n_workers):
        f = _mace_objective_of_worker(run, j)
        u0 = np.r_[p.theta[j], p.xi[j, 1:]]
        P = u0.size
        E = np.eye(P) * h
        grad = np.array([(f(u0 + E[a]) - f(u0 - E[a])) / (2 * h) for a in range(P)])
        H = np.array(
            [[(f(u0 + E[a] + E[b]) - f(u0 + E[a] - E[b]) - f(u0 - E[a] + E[b]) + f(u0 - E[a] - E[b])) / (4 * h * h)
              for b in range(P)] for a in range(P)]
        )  # fmt: skip
        assert np.abs(grad).max() < 1e-3 * np.abs(H).max()
        g = np.r_[1.0 - p.xi[j] @ pi, (1.0 - p.theta[j]) * (pi[1:] - pi[0])]
        cov = np.linalg.inv(-H)
        se = np.sqrt(g @ cov @ g)
        assert df.se[j] == pytest.approx(se, rel=1e-3)
        # P(spamming) = 1 - theta: its logit-scale interval has half-width z se(theta) / (theta (1 - theta))
        s_ = df.spamming[j]
        half = 1.959963985 * np.sqrt(cov[0, 0]) / (s_ * (1 - s_))
        assert np.log(df.spam_upper[j] / (1 - df.spam_upper[j])) - np.log(s_ / (1 - s_)) == pytest.approx(
            half, rel=1e-3
        )
        est = p.theta[j] + (1 - p.theta[j]) * p.xi[j] @ pi
        assert df.estimate[j] == pytest.approx(est, abs=1e-12)
        assert df.lower[j] < est < df.upper[j] and df.note[j] == ""


def test_mace_intervals_cover_the_truth_better_than_the_labels_as_known_interval():
    """60 seeded crowds (Dawid-Skene data, K = 2): the Wald interval of MACE's accuracy covers the truth 0.913 of
    the time (the conditional information leaves out the other workers' uncertainty); the exact binomial interval
    with the labels taken as known, what the worker report used before, 0.86."""
    from crowdlab.analysis.reports import worker_report

    hits, known = [], []
    for rep in range(60):
        sim = simulate_crowd(300, 5, 2, labels_per_item=5, class_prior=[0.6, 0.4], expert_accuracy=(0.7, 0.9),
                             seed=1000 + rep)  # fmt: skip
        run = fit(sim.annotations, "mace")
        truth = np.diagonal(sim.gamma, axis1=1, axis2=2) @ sim.pi
        df = fisher.mace_worker_intervals(run.model, run.data, run.params)
        hits.append((df.lower.to_numpy() <= truth) & (truth <= df.upper.to_numpy()))
        cp = worker_report(run, intervals=False)
        known.append((cp.lower.to_numpy() <= truth) & (truth <= cp.upper.to_numpy()))
    assert 0.89 <= np.mean(hits) <= 0.99 and np.mean(hits) > np.mean(known) + 0.03, (np.mean(hits), np.mean(known))


def test_mace_intervals_on_the_boundary_fall_back_with_a_note():
    """A worker on the boundary (theta = 1 under a flat prior) gets the exact binomial interval and says why;
    semi-supervised items count with their known class; nothing is NaN."""
    d = simulate_crowd(120, 4, 2, labels_per_item=3, seed=3).annotations
    flat = fit(d, "mace", model_options={"theta_prior": (1.0, 1.0), "strategy_prior": 1.0}, reveal=0.5)
    df = fisher.mace_worker_intervals(flat.model, flat.data, flat.params)
    assert np.isfinite(df[["estimate", "lower", "upper"]].to_numpy()).all()
    edge = (flat.params.theta >= 1 - 1e-6) | (flat.params.xi <= 1e-6).any(axis=1)
    assert edge.any() and (df.note[edge].str.startswith("on the boundary")).all()
    assert ((df.lower <= df.estimate) & (df.estimate <= df.upper)).all()
