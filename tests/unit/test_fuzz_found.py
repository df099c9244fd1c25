"""Wrong answers a random search found (issue 28, section 5; issue 31's online size options), each kept as a case.

Online Dawid-Skene: options that cannot work are refused with the valid range in the message; everything it
accepts stays finite (the issue's two concrete problems, and a seeded sweep of small, sparse and single-item
problems with aggressive options). GLAD ends on the sparse problem that ran past 20 s. M-MSR's labels agree with
its own scores. The pandas API applies the reader's limits before it allocates.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from crowdlab.engines.online import OnlineRun
from crowdlab.engines.run import nonfinite_entries
from crowdlab.errors import ModelError
from crowdlab.io.data import Annotations
from crowdlab.models.online import MAX_LABEL_VISITS, OnlineDawidSkene, OnlineOneCoin
from tests.unit.fuzz_problems import class_problem

# issue 42: every warning is an error in the fuzz of the models (none may leak from a model)
pytestmark = pytest.mark.filterwarnings("error")


def _names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def _random_labels(N: int, M: int, K: int, n: int, seed: int) -> Annotations:
    rng = np.random.default_rng(seed)
    return Annotations(
        rng.integers(0, N, n), rng.integers(0, M, n), rng.integers(0, K, n), _names("i", N), _names("w", M),
        _names("c", K),
    )  # fmt: skip


def _finite_run(data: Annotations, model) -> OnlineRun:
    """Run to the end; the objective finite at every update, the posterior and parameters finite at up to 25
    snapshots spread over the run (each replays from a checkpoint), the posterior on the simplex."""
    run = OnlineRun(data, model)
    run.run()
    assert np.all(np.isfinite(run.history()["objective"]))
    n = len(run.snapshots)
    for i in sorted({*range(0, n, max(n // 25, 1)), n - 1}):
        run.goto(i)
        q = run.current.q
        assert np.all(np.isfinite(q)) and np.allclose(q.sum(axis=1), 1.0)
        assert nonfinite_entries(run.current.params) == []
    return run


# ------------------------------------------------------------------ online Dawid-Skene
@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"rho": 3.0}, "outside [0, 1]"),
        ({"rho": -0.1}, "outside [0, 1]"),
        ({"eta0": 100.0}, "outside (0, (1 + tau0)^rho] = (0, 4.215]"),
        ({"eta0": 3.0, "tau0": 0.0, "rho": 0.6}, "(0, 1]"),
        ({"eta0": 0.0}, "outside (0,"),
        ({"tau0": float("nan")}, "finite"),
    ],
)
def test_online_options_that_cannot_work_are_refused_with_the_range(options, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        OnlineDawidSkene(**options)


def test_online_issue_case_single_item_rho_3_is_refused():
    """One item, 4 workers, K = 2, eta0 = 3, rho = 3, batch 10, 5 passes: non-finite before; rho = 3 is now
    refused, and the same problem with options in range stays finite."""
    data = Annotations(np.zeros(4, int), np.arange(4), np.array([0, 1, 0, 1]), ["i0"], _names("w", 4), ["a", "b"])
    with pytest.raises(ValueError, match=r"rho = 3 is outside \[0, 1\]"):
        OnlineDawidSkene(eta0=3, rho=3, batch_size=10, passes=5)
    for prior in (0.0, 1.0):
        _finite_run(data, OnlineDawidSkene(eta0=3, rho=0.6, batch_size=10, passes=5, prior=prior))


@pytest.mark.parametrize("prior", [0.0, 1.0])
@pytest.mark.parametrize("worker_steps", [False, True])
def test_online_issue_case_very_sparse_stays_finite(prior, worker_steps):
    """N = 271, M = 37, K = 2, 83 labels, eta0 = 0.05, rho = 0.6, 26 buckets, batch 2: buckets nobody hashes to
    had 0 / 0 confusion columns with no prior."""
    data = _random_labels(271, 37, 2, 83, seed=0)
    model = OnlineDawidSkene(
        eta0=0.05, rho=0.6, buckets=26, batch_size=2, prior=prior, worker_steps=worker_steps, passes=2
    )
    run = _finite_run(data, model)
    empty = np.setdiff1d(np.arange(26), run.stream.bucket)
    if prior == 0 and empty.size:  # a bucket with no labels keeps the start's matrix
        gamma = model.bucket_params(run._tip)[1]
        np.testing.assert_allclose(np.diagonal(gamma[empty], axis1=1, axis2=2), model.init_accuracy)


def test_online_empty_bucket_without_prior_has_finite_parameters():
    data = _random_labels(5, 3, 3, 6, seed=1)
    for cls in (OnlineDawidSkene, OnlineOneCoin):
        model = cls(buckets=50, prior=0.0, passes=2, batch_size=2)
        _finite_run(data, model)


def test_online_step_of_one_without_prior_on_a_block_is_refused():
    data = _random_labels(30, 5, 2, 100, seed=2)
    with pytest.raises(ModelError, match="must be below 1"):
        OnlineRun(data, OnlineDawidSkene(eta0=1.0, tau0=0.0, rho=0.0, batch_size=10, prior=0.0))
    # the whole data in one block: a step of 1 is batch EM, allowed
    _finite_run(data, OnlineDawidSkene(eta0=1.0, tau0=0.0, rho=0.0, batch_size=30, prior=0.0, passes=3))


def test_online_start_below_chance_is_refused_with_the_range():
    data = _random_labels(30, 5, 2, 100, seed=3)
    with pytest.raises(ModelError, match=re.escape("(1/K, 1) = (0.5, 1) for K = 2")):
        OnlineRun(data, OnlineDawidSkene(init_accuracy=0.01, prior=0.0))


def test_online_accepted_options_stay_finite_on_adversarial_problems():
    """A seeded sweep: small, sparse, single-item, single-worker, one-class and repeated-pair problems, with
    aggressive options inside the valid ranges (no prior, eta_1 near 1, rho 0 or 1, many buckets)."""
    refused = 0
    for seed in range(40):
        rng = np.random.default_rng(seed + 777)
        data = class_problem(seed, max_items=int(rng.choice([3, 30, 120])), max_workers=int(rng.choice([3, 6, 40])))
        tau0 = float(rng.choice([0.0, 1.0, 10.0]))
        rho = float(rng.choice([0.0, 0.3, 0.6, 1.0]))
        options = dict(
            eta0=float(rng.choice([0.05, 0.5, 1.0])) * (1 + tau0) ** rho * 0.999,
            tau0=tau0,
            rho=rho,
            buckets=[None, 1, 3, 26][int(rng.integers(4))],
            batch_size=int(rng.choice([1, 2, 10])),
            passes=int(rng.integers(1, 4)),
            prior=float(rng.choice([0.0, 0.5, 1.0])),
            init_accuracy=float(rng.choice([0.51, 0.7, 0.99])),
            worker_steps=bool(rng.integers(2)),
        )
        cls = (OnlineDawidSkene, OnlineOneCoin)[seed % 2]
        with np.errstate(all="raise"):  # no 0 / 0, no overflow on the way either
            try:
                _finite_run(data, cls(**options))
            except ModelError:
                refused += 1
    assert refused < 10


def test_online_buckets_bounded_by_memory_with_a_message():
    """``--buckets 10**12`` asked numpy for 7.28 TiB: now refused before any allocation, with the limit's name."""
    data = _random_labels(20, 5, 2, 40, seed=4)
    with pytest.raises(ModelError, match=r"max_confusion_cells.*at most 25,000,000 buckets.*CROWDLAB_MAX_CONFUSION"):
        OnlineRun(data, OnlineDawidSkene(buckets=10**12))


def test_online_passes_bounded_with_an_estimate():
    data = _random_labels(20, 5, 2, 40, seed=5)
    with pytest.raises(ModelError, match=r"label visits.*would take about 11.1 hours.*at most 25,000,000 passes"):
        OnlineRun(data, OnlineDawidSkene(passes=10**9))
    assert MAX_LABEL_VISITS // 40 == 25_000_000
    OnlineDawidSkene(passes=10).check(data)  # ordinary runs pass


def test_cli_online_size_options_give_messages(tmp_path, capsys):
    from crowdlab.cli import main

    path = tmp_path / "labels.csv"
    path.write_text("item,worker,label\n" + "".join(f"i{i},w{i % 3},{i % 2}\n" for i in range(12)))
    for flags, says in (
        (["--buckets", str(10**12)], "max_confusion_cells"),
        (["--passes", str(10**9)], "label visits"),
        (["--rho", "3"], "[0, 1]"),
        (["--eta0", "100"], "(0, (1 + tau0)^rho]"),
    ):
        rc = main(["fit", str(path), "--method", "online_ds", *flags, "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert rc == 2 and says in err and "Traceback" not in err, (flags, err)


# ------------------------------------------------------------------ GLAD from moment matching
def _concentrated_sparse_problem() -> Annotations:
    """N = 267, M = 20, K = 9, 213 labels on 30 of the items (most items unlabelled): 20 workers share items, so
    649 worker triples enter the third-order moments, 4.3e6 cells for every evaluation of g."""
    rng = np.random.default_rng(1)
    N, M, K, n = 267, 20, 9, 213
    ii = rng.choice(rng.choice(N, 30, replace=False), n)
    ww = rng.integers(0, M, n)
    truth, acc = rng.integers(0, K, N), rng.uniform(0.2, 0.99, M)
    lab = np.where(rng.random(n) < acc[ww], truth[ii], rng.integers(0, K, n))
    return Annotations(ii, ww, lab, _names("i", N), _names("w", M), _names("c", K))


def test_moment_matching_bounds_its_third_order_work():
    """GLAD with the moment-matching start ran past 20 s before its first step: the fit of eq. (17) evaluated
    649 triples x 9^4 cells some 400 times. The triples are now capped by THIRD_ORDER_CELLS."""
    from crowdlab.engines.moments import THIRD_ORDER_CELLS, sample_moments, third_order_workers

    data = _concentrated_sparse_problem()
    mom = sample_moments(data)
    assert mom.triples.shape[0] * data.n_classes**4 <= THIRD_ORDER_CELLS
    assert third_order_workers(9, 20) == 10 and third_order_workers(4, 20) == 20  # small K: unchanged


def test_glad_ends_on_the_sparse_problem():
    from crowdlab.engines.run import Run
    from crowdlab.models.glad import GLAD

    data = _concentrated_sparse_problem()
    run = Run(data, GLAD(prior=5, class_prior="estimate", alpha_prior=(5, 100)), "moments", max_iter=10_000)
    run.run()
    assert run.stop_reason == "converged" and run.iteration < 1000
    assert np.all(np.isfinite(run.history()["objective"]))


# ------------------------------------------------------------------ labels agree with scores
def test_mmsr_label_is_a_top_scoring_class_of_its_scores():
    """Single item, single worker, one-label workers, repeated pairs: M-MSR's weights of workers at chance are
    log(1) up to rounding, and the shifted, normalised noise gave scores [0.5, 0, 0.5] beside the label 1."""
    from crowdlab.models.baselines import BASELINES, mmsr

    data = class_problem(43)  # one item, four workers at chance
    b = mmsr(data)
    assert b.scores[0, b.labels[0]] == b.scores[0].max()
    for key, (_, fn) in BASELINES.items():
        for seed in range(100):
            data = class_problem(seed, K=2 if key == "kos" else None)
            b = fn(data)
            rows = np.arange(data.n_items)
            assert np.all(b.scores[rows, b.labels] == b.scores.max(axis=1)), (key, seed)
            np.testing.assert_allclose(b.scores.sum(axis=1), 1.0)


# ------------------------------------------------------------------ the pandas API applies the reader's limits
def test_dataframe_with_too_many_classes_is_refused_before_allocating():
    import tracemalloc

    import pandas as pd

    from crowdlab.errors import DataError
    from crowdlab.frames import DawidSkene, from_dataframe

    n = 400_000
    df = pd.DataFrame({"task": np.arange(n) % 200_000, "worker": np.arange(n) % 50, "label": np.arange(n) % 2000})
    tracemalloc.start()
    try:
        with pytest.raises(DataError) as info:
            DawidSkene().fit(df)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 500e6  # the (400,000 x 2,000) float64 vote table alone is 6.4 GB
    msg = str(info.value)
    assert "2,000 classes is more than the 100 crowdlab accepts (max_classes)" in msg
    assert "set_limits(max_classes=...)" in msg and "CROWDLAB_MAX_CLASSES" in msg
    # the reader's message for the same labels, word for word
    from crowdlab.io.data import _class_annotations

    with pytest.raises(DataError) as reader:
        cols = (df[c].to_numpy() for c in ("task", "worker", "label"))
        _class_annotations(None, "label", *cols, "x", ())
    assert str(reader.value) == msg
    from crowdlab.io import limits

    with limits.override(max_workers=10):
        with pytest.raises(DataError, match=r"50 workers is more than the 10 crowdlab accepts \(max_workers\)"):
            from_dataframe(df.head(100))
