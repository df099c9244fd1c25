"""Soft votes (issue 28, section 4): per-observation weights in Annotations, read from a ``confidence`` column or
``p_<class>`` columns, used as fractional evidence by every class model.

- weights that are all 1 give exactly the numbers of hard labels (1e-12; the weighted path, not only the reader);
- an observation of weight 2 is the same observation given twice (what "fractional count" means);
- EM never decreases the weighted objective sum_i log sum_k pi_k prod P(l | k, j)^w (+ prior) on soft problems,
  and that objective is the formula, computed by brute force for Dawid-Skene;
- the reader: confidence and p_<class> columns, its notes, its refusals.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from crowdlab.engines.run import Run
from crowdlab.errors import DataError, ModelError
from crowdlab.io.data import Annotations, read_annotations, soft_votes
from crowdlab.models import GLAD, IBCC, MACE, DawidSkene, MaceVB, MajorityVote, OneCoin, TwoCoin
from crowdlab.models.majority import majority_labels, majority_posterior, vote_fractions
from tests.unit.fuzz_problems import check_run, class_problem, soft_problem

CLASS_MODELS = [DawidSkene, OneCoin, TwoCoin, GLAD, MACE, MaceVB, IBCC]


def _model(cls, K: int, prior: float = 1.0):
    if cls is GLAD:
        return GLAD(prior=prior, class_prior="estimate")
    if cls in (IBCC, MaceVB):
        return cls()
    return cls(prior=prior)


def _problem(seed: int, cls) -> Annotations:
    return class_problem(seed, K=2 if cls is TwoCoin else None)


@pytest.mark.parametrize("cls", CLASS_MODELS)
def test_weights_of_one_are_hard_labels(cls):
    for seed in range(6):
        hard = _problem(seed, cls)
        ones = replace(hard, weight=np.ones(hard.n_obs))
        assert ones.is_soft and not hard.is_soft
        a = Run(hard, _model(cls, hard.n_classes), "majority", max_iter=15)
        b = Run(ones, _model(cls, hard.n_classes), "majority", max_iter=15)
        a.run(), b.run()
        np.testing.assert_allclose(b.history()["objective"], a.history()["objective"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b.posterior, a.posterior, rtol=0, atol=1e-12)


def test_one_hot_soft_votes_read_as_hard_labels():
    hard = class_problem(3)
    same = soft_votes(hard, np.eye(hard.n_classes)[hard.label])
    assert not same.is_soft
    np.testing.assert_array_equal(same.label, hard.label)
    np.testing.assert_array_equal(same.item, hard.item)


@pytest.mark.parametrize("cls", [DawidSkene, OneCoin, GLAD, MACE])
def test_weight_two_is_the_label_given_twice(cls):
    data = class_problem(8, K=3)
    twice = replace(data, item=np.r_[data.item, data.item[:5]], worker=np.r_[data.worker, data.worker[:5]],
                    label=np.r_[data.label, data.label[:5]])  # fmt: skip
    w = np.ones(data.n_obs)
    w[:5] = 2.0
    weighted = replace(data, weight=w)
    a = Run(twice, _model(cls, 3), "majority", max_iter=20)
    b = Run(weighted, _model(cls, 3), "majority", max_iter=20)
    a.run(), b.run()
    np.testing.assert_allclose(b.posterior, a.posterior, atol=1e-9)
    np.testing.assert_allclose(b.history()["objective"], a.history()["objective"], rtol=1e-10)


@pytest.mark.parametrize("cls", CLASS_MODELS)
def test_em_never_decreases_the_weighted_objective(cls):
    for seed in range(40):
        data = soft_problem(seed, K=2 if cls is TwoCoin else None)
        assert data.is_soft
        prior = (0.0, 1.0)[seed % 2] if cls not in (IBCC, MaceVB) else 1.0
        run = Run(data, _model(cls, data.n_classes, prior), ("majority", "random")[seed % 2], seed=seed, max_iter=25)
        run.run()
        check_run(run)


def test_dawid_skene_objective_is_the_weighted_likelihood():
    data = soft_problem(4)
    run = Run(data, DawidSkene(), "majority", max_iter=5)
    run.run()
    p = run.params
    K = data.n_classes
    direct = 0.0
    for i in range(data.n_items):
        rows = np.flatnonzero(data.item == i)
        terms = [
            np.log(p.pi[k]) + sum(data.weight[r] * np.log(p.gamma[data.worker[r], data.label[r], k]) for r in rows)
            for k in range(K)
        ]
        direct += np.logaddexp.reduce(terms)
    assert run.history()["objective"][-1] == pytest.approx(direct, rel=1e-12)


def test_majority_vote_sums_the_weights():
    data = soft_problem(5)
    v = np.zeros((data.n_items, data.n_classes))
    np.add.at(v, (data.item, data.label), data.weight)
    np.testing.assert_allclose(data.vote_counts, v)
    np.testing.assert_allclose(vote_fractions(data).sum(axis=1), 1.0)
    lab = majority_labels(data)
    assert np.all(v[np.arange(data.n_items), lab] >= v.max(axis=1) - 1e-12)
    assert np.all(majority_posterior(data)[np.arange(data.n_items), lab] > 0)
    assert Run(data, MajorityVote()).violations == []


def test_baselines_and_online_refuse_soft_votes():
    from crowdlab.engines.online import OnlineRun
    from crowdlab.models.baselines import wawa
    from crowdlab.models.online import OnlineDawidSkene

    data = soft_problem(6)
    with pytest.raises(ModelError, match="soft votes"):
        wawa(data)
    with pytest.raises(ModelError, match="soft votes"):
        OnlineRun(data, OnlineDawidSkene())


# ------------------------------------------------------------------ the reader
def test_reader_confidence_column(tmp_path):
    f = tmp_path / "judges.csv"
    f.write_text("item,worker,label,confidence\nt1,a,yes,0.8\nt1,b,no,1.0\nt2,a,no,\nt2,b,maybe,0.4\n")
    d = read_annotations(f)
    assert d.is_soft and d.class_names == ("maybe", "no", "yes")
    rows = sorted(zip(d.item.tolist(), d.worker.tolist(), d.label.tolist(), d.weight.round(6).tolist()))
    assert rows == [
        (0, 0, 0, 0.1), (0, 0, 1, 0.1), (0, 0, 2, 0.8), (0, 1, 1, 1.0),
        (1, 0, 1, 1.0), (1, 1, 0, 0.4), (1, 1, 1, 0.3), (1, 1, 2, 0.3),
    ]  # fmt: skip
    note = " ".join(d.notes)
    assert "soft votes from column 'confidence'" in note and "1 row without a confidence" in note
    assert d.summary()["labels"] == 4 and "soft votes" in d.summary()


def test_reader_probability_columns(tmp_path):
    f = tmp_path / "probs.csv"
    f.write_text("item,worker,label,p_yes,p_no\nt1,a,yes,0.7,0.3\nt1,b,no,0.2,0.6\nt2,a,no,0.2,0.8\n")
    d = read_annotations(f)
    assert d.is_soft
    got = {(int(i), int(w), d.class_names[k]): round(float(x), 6) for i, w, k, x in
           zip(d.item, d.worker, d.label, d.weight)}  # fmt: skip
    assert got == {
        (0, 0, "yes"): 0.7,
        (0, 0, "no"): 0.3,
        (0, 1, "yes"): 0.25,
        (0, 1, "no"): 0.75,
        (1, 0, "yes"): 0.2,
        (1, 0, "no"): 0.8,
    }
    assert "1 row did not sum to 1 and were normalised" in " ".join(d.notes)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("item,worker,label,confidence\nt1,a,yes,1.5\nt1,b,no,0.5\n", "not a number from 0 to 1"),
        ("item,worker,label,confidence\nt1,a,yes,high\nt1,b,no,0.5\n", "not a number from 0 to 1"),
        ("item,worker,label,p_yes,p_maybe\nt1,a,yes,0.5,0.5\nt1,b,no,0.5,0.5\n", "'p_maybe' name no class"),
        ("item,worker,label,p_yes,p_no\nt1,a,yes,0,0\nt1,b,no,0.5,0.5\n", "every class probability 0"),
    ],
)
def test_reader_refuses_bad_soft_votes(tmp_path, body, says):
    f = tmp_path / "bad.csv"
    f.write_text(body)
    with pytest.raises(DataError, match=says):
        read_annotations(f)


def test_all_certain_confidences_are_hard_labels(tmp_path):
    f = tmp_path / "sure.csv"
    f.write_text("item,worker,label,confidence\nt1,a,yes,1\nt1,b,no,1.0\nt2,a,no,1\n")
    d = read_annotations(f)
    assert not d.is_soft and d.n_obs == 3
    assert "these are hard labels" in " ".join(d.notes)


def test_long_dataframe_round_trips_the_weights(tmp_path):
    from crowdlab.io.data import to_long_dataframe

    data = soft_problem(7)
    frame = to_long_dataframe(data)
    assert list(frame.columns) == ["item", "worker", "label", "weight"]
    path = tmp_path / "soft.csv"
    frame.to_csv(path, index=False)
    back = read_annotations(path)
    np.testing.assert_allclose(back.weight, data.weight, rtol=1e-15)
    assert [back.class_names[k] for k in back.label] == [data.class_names[k] for k in data.label]


def test_streaming_engines_refuse_soft_vote_files(tmp_path, capsys):
    """The streaming and Dask engines count whole labels: a confidence column is refused, not silently dropped."""
    from crowdlab.cli import main

    f = tmp_path / "judges.csv"
    f.write_text("item,worker,label,confidence\n" + "".join(f"t{i},w{i % 3},{'ab'[i % 2]},0.7\n" for i in range(12)))
    rc = main(["fit", str(f), "--stream", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and "soft votes" in err and "in-memory engine" in err, err
