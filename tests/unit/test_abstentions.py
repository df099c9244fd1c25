"""'Can't tell' answers (issue 28, section 4): a response that is not a class. Dawid-Skene gets K classes x (K + R)
responses and learns who abstains on which class; a worker who always abstains leaves the posterior as it is
without that worker (1e-12); majority vote ignores abstentions; the worker report gives the abstention rate; the
reader reads them with ``abstain=`` and notes a label spelled like one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from crowdlab.analysis.reports import worker_report
from crowdlab.engines.run import Run
from crowdlab.errors import DataError, ModelError
from crowdlab.io.data import Annotations, read_annotations
from crowdlab.models import GLAD, DawidSkene, MajorityVote, applicable_models, make_model
from tests.unit.fuzz_problems import check_run, class_problem


def _with_abstainer(data: Annotations, rate_by_class=None, seed: int = 0) -> Annotations:
    """``data`` plus one response "?" (code K) and one extra worker; ``rate_by_class=None``: the new worker
    answers "?" on every item; else the existing workers abstain on class k with that rate (by gold)."""
    K, N, M = data.n_classes, data.n_items, data.n_workers
    if rate_by_class is None:
        item = np.r_[data.item, np.arange(N)]
        worker = np.r_[data.worker, np.full(N, M)]
        label = np.r_[data.label, np.full(N, K)]
        return replace(data, item=item, worker=worker, label=label, worker_names=(*data.worker_names, "abstainer"),
                       response_names=("?",))  # fmt: skip
    rng = np.random.default_rng(seed)
    label = data.label.copy()
    label[rng.random(label.size) < np.asarray(rate_by_class)[data.gold[data.item]]] = K
    return replace(data, label=label, response_names=("?",))


@pytest.mark.parametrize("seed", range(12))
def test_a_worker_who_always_abstains_changes_nothing(seed):
    data = class_problem(seed, K=3)
    with_abs = _with_abstainer(data)
    assert with_abs.n_responses == 4 and with_abs.label_counts.shape[1] == 4 * with_abs.n_workers
    a = Run(data, DawidSkene(), "majority", max_iter=40)
    b = Run(with_abs, DawidSkene(), "majority", max_iter=40)
    for _ in range(30):  # the same number of half-steps (the stopping rules see the abstainer's matrix move)
        a.step(), b.step()
    np.testing.assert_allclose(b.posterior, a.posterior, rtol=0, atol=1e-12)
    seen = b.snapshots[-2].q.sum(axis=0) > 0  # Gamma(abstain | k) = 1 for every class the posterior holds
    np.testing.assert_allclose(b.params.gamma[-1, 3][seen], 1.0)
    np.testing.assert_allclose(b.history()["objective"], a.history()["objective"], atol=1e-9)


def test_em_learns_who_abstains_on_which_class():
    """Everyone abstains on class 0 half the time and never on class 1: the "?" row of every matrix finds it."""
    from crowdlab.teaching.simulate import simulate_crowd

    data = simulate_crowd(n_items=600, n_workers=8, n_classes=2, labels_per_item=6, seed=3).annotations
    abs_data = _with_abstainer(data, rate_by_class=[0.5, 0.0])
    run = Run(abs_data, DawidSkene(prior=1.0), "majority")
    run.run()
    row = run.params.gamma[:, 2, :]  # P("?" | true class) per worker
    assert np.all(np.abs(row[:, 0] - 0.5) < 0.12) and np.all(row[:, 1] < 0.03)
    check_run(run)
    rep = worker_report(run)
    assert "abstention_rate" in rep and np.all(rep["abstention_rate"].between(0.1, 0.4))
    assert (run.labels() == abs_data.gold).mean() > 0.85


def test_majority_vote_ignores_abstentions():
    data = class_problem(5, K=3)
    abs_data = _with_abstainer(data)
    np.testing.assert_array_equal(abs_data.vote_counts, data.vote_counts)
    np.testing.assert_array_equal(Run(abs_data, MajorityVote()).labels(), Run(data, MajorityVote()).labels())
    from crowdlab.models.majority import majority_labels

    np.testing.assert_array_equal(majority_labels(abs_data, "first"), majority_labels(data, "first"))


def test_models_without_rows_for_responses_refuse_them():
    abs_data = _with_abstainer(class_problem(2))
    with pytest.raises(ModelError, match="responses that are not classes"):
        Run(abs_data, GLAD())
    with pytest.raises(ModelError, match="moment matching"):
        Run(abs_data, DawidSkene(), "moments")
    for init in ("random", "all_good"):
        check_run(Run(abs_data, DawidSkene(prior=1.0), init, max_iter=20))


def test_reader_abstain_option_and_note(tmp_path):
    f = tmp_path / "l.csv"
    f.write_text("item,worker,label\n" + "".join(
        f"t{i},w{j},{'unsure' if (i + j) % 5 == 0 else 'ab'[(i * j) % 2]}\n" for i in range(20) for j in range(3)
    ))  # fmt: skip
    plain = read_annotations(f)
    assert "unsure" in plain.class_names and any("abstain='unsure'" in n for n in plain.notes)
    d = read_annotations(f, abstain="unsure")
    assert d.class_names == ("a", "b") and d.response_names == ("unsure",)
    assert any('as "can\'t tell"' in n for n in d.notes)
    np.testing.assert_array_equal(
        np.array(d.class_names + d.response_names)[d.label], np.array(plain.class_names)[plain.label]
    )
    with pytest.raises(DataError, match="fewer than two classes"):
        g = tmp_path / "g.csv"
        g.write_text("item,worker,label\nt1,w1,a\nt1,w2,?\n")
        read_annotations(g, abstain="?")


ABSTAINING_MODELS = ("ds", "ibcc", "ebcc", "mace", "mace_vb", "one_coin", "two_coin")


@pytest.mark.parametrize("key", ABSTAINING_MODELS)
@pytest.mark.parametrize("seed", range(4))
def test_every_model_with_a_place_for_abstentions_ignores_an_always_abstaining_worker(key, seed):
    """The posterior with a worker who answers "?" on every item equals the one without that worker (1e-12), step
    by step. MACE's spam strategy runs over every response and its Dirichlet prior sees the alphabet, so it is
    compared with the same alphabet (nobody abstaining); the others with the plain data."""
    data = class_problem(seed, K=2 if key == "two_coin" else 3)
    without = replace(data, response_names=("?",)) if key.startswith("mace") else data
    a = Run(without, make_model(key), "majority", max_iter=40)
    b = Run(_with_abstainer(data), make_model(key), "majority", max_iter=40)
    for _ in range(30):
        a.step(), b.step()
        np.testing.assert_allclose(b.posterior, a.posterior, rtol=0, atol=1e-12)
    assert b.params.gamma.shape[1] == data.n_classes + 1
    np.testing.assert_allclose(b.params.gamma.sum(axis=1), 1.0, atol=1e-12)  # columns over K + 1 responses
    check_run(b)


def test_ibcc_and_ebcc_learn_who_abstains_on_which_class():
    from crowdlab.teaching.simulate import simulate_crowd

    data = simulate_crowd(n_items=600, n_workers=8, n_classes=2, labels_per_item=6, seed=3).annotations
    abs_data = _with_abstainer(data, rate_by_class=[0.5, 0.0])
    for key in ("ibcc", "ebcc"):
        run = Run(abs_data, make_model(key), "majority")
        run.run()
        rho = run.params.abstain[:, 0, :]  # (M, K)
        assert np.all(np.abs(rho[:, 0] - 0.5) < 0.12) and np.all(rho[:, 1] < 0.03), key
        assert (run.labels() == abs_data.gold).mean() > 0.85
        rep = worker_report(run)
        assert np.all(rep["abstention_rate"].between(0.1, 0.4))


def test_mace_and_coins_rates_do_not_depend_on_the_class():
    """MACE: an abstention is spam (Gamma("?", t) = (1 - theta) xi("?") for every t); one-coin and two-coin: each
    worker's share of "?" answers; in all three the class posterior is the one with the abstentions dropped."""
    data = class_problem(4, K=2)
    abs_data = _with_abstainer(data, rate_by_class=[0.4, 0.1], seed=2) if data.gold is not None else None
    if abs_data is None:
        pytest.skip("no gold")
    keep = abs_data.label < abs_data.n_classes
    dropped = replace(abs_data, item=abs_data.item[keep], worker=abs_data.worker[keep], label=abs_data.label[keep])
    for key in ("mace", "one_coin", "two_coin"):
        run = Run(abs_data, make_model(key), "majority", max_iter=50)
        run.run()
        row = run.params.gamma[:, 2, :]
        np.testing.assert_allclose(row[:, 0], row[:, 1], atol=1e-12)
        if key != "mace":  # the coins: exactly the fit without the abstentions
            ref = Run(replace(dropped, response_names=()), make_model(key), "majority", max_iter=50)
            ref.run()
            np.testing.assert_allclose(run.posterior, ref.posterior, atol=1e-10)
            said = np.bincount(abs_data.worker[~keep], minlength=abs_data.n_workers)
            n = np.bincount(abs_data.worker, minlength=abs_data.n_workers)
            np.testing.assert_allclose(run.params.extra["abstain"][:, 0], said / n, atol=1e-12)


def test_applicable_models_offer_only_those_with_a_place_for_abstentions():
    keys = applicable_models(_with_abstainer(class_problem(2, K=2)))
    assert set(keys) == {"mv", *ABSTAINING_MODELS}


def _unsure_file(tmp_path):
    f = tmp_path / "l.csv"
    f.write_text("item,worker,label\n" + "".join(
        f"t{i},w{j},{'unsure' if (i + 2 * j) % 7 == 0 else 'ab'[(i + (j == 2)) % 2]}\n"
        for i in range(30)
        for j in range(4)
    ))  # fmt: skip
    return f


def test_cli_abstain_option_and_note(tmp_path, capsys):
    import json

    from crowdlab.cli import main

    f = _unsure_file(tmp_path)
    assert main(["fit", str(f), "--method", "ibcc", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "--abstain 'unsure' reads it as a response" in out  # the note, spelled for the command line
    assert main(["fit", str(f), "--method", "ibcc", "--abstain", "unsure", "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    n_abs = sum(line.endswith(",unsure") for line in f.read_text().splitlines())
    assert f"({n_abs} abstentions: 'unsure')" in out and "2 classes" in out
    params = json.loads((tmp_path / "b" / "params.json").read_text())
    assert len(params["gamma"][0]) == 3  # K + 1 responses per column
    import pandas as pd

    assert pd.read_csv(tmp_path / "b" / "workers.csv")["abstention_rate"].between(0, 1).all()
    assert main(["fit", str(f), "--method", "glad", "--abstain", "unsure", "--out", str(tmp_path / "c")]) == 2
    assert "no place for the responses" in capsys.readouterr().err


def test_pandas_api_abstain(tmp_path):
    import pandas as pd

    import crowdlab as cl
    from crowdlab.frames import from_dataframe

    df = pd.read_csv(_unsure_file(tmp_path))
    plain = from_dataframe(df)
    assert "unsure" in plain.class_names and any("fit(df, abstain='unsure')" in n for n in plain.notes)
    d = from_dataframe(df, abstain="unsure")
    assert d.class_names == ("a", "b") and d.response_names == ("unsure",)
    ref = read_annotations(_unsure_file(tmp_path), abstain="unsure")
    np.testing.assert_array_equal(d.label, ref.label)
    est = cl.IBCC().fit(df, abstain="unsure")
    assert list(est.probas_.columns) == ["a", "b"] and set(est.labels_) <= {"a", "b"}
    assert list(est.errors_.index.get_level_values(1)[:3]) == ["a", "b", "unsure"]
    said = df.assign(u=df.label.eq("unsure")).groupby("worker").u.mean()
    np.testing.assert_allclose(est.abstention_rate_.to_numpy(), said.to_numpy())
    run = Run(ref, DawidSkene())
    run.run()
    np.testing.assert_allclose(cl.proba(df, "ds", abstain="unsure").to_numpy(), run.posterior, atol=1e-12)
    assert cl.aggregate(df, "mv", abstain="unsure").isin(["a", "b"]).all()


@pytest.mark.parametrize("key", ABSTAINING_MODELS)
def test_the_formulas_tab_explains_steps_with_abstentions(key):
    """The "what just happened" lines for every worker (an abstainer among them) and an item: each model's own
    formulas read the "can't tell" rows instead of indexing a class that does not exist."""
    from crowdlab.teaching import explain

    K = 2 if key == "two_coin" else 3
    d = _with_abstainer(_with_abstainer(class_problem(1, K=K), rate_by_class=[0.3] * K, seed=1))
    d = replace(d, response_names=("?",))
    run = Run(d, make_model(key))
    for _ in range(3):
        run.step()
    own = explain.NEW_MODEL_EXPLAINERS.get(key)
    for w in range(d.n_workers):
        if own:
            lines = own[0](d, run.params, 0) + own[1](d, run.posterior, run.params, w)
        else:
            lines = explain.e_step_classes(d, run.params, 0, key) + explain.m_step_classes(d, run.posterior, w, key)
        assert lines and all(isinstance(line, str) for line in lines)
    text = " ".join(lines)  # the abstainer's lines
    if key in ("one_coin", "two_coin", "ibcc"):
        assert r"\rho_m" in text
    if key == "ds":
        assert "of each column: ?" in text


@pytest.mark.parametrize("key", ["ibcc", "ebcc", "mace_vb"])
def test_credible_intervals_hold_the_accuracy_with_abstentions(key):
    """A right answer is an answer that is right: the credible interval scales by the point rate of answering, so
    it holds the accuracy the report shows (sum_k pi_k Gamma(k, k), "can't tell" counted as not right)."""
    from crowdlab.teaching.simulate import simulate_crowd

    data = simulate_crowd(n_items=200, n_workers=6, n_classes=2, labels_per_item=5, seed=4).annotations
    run = Run(_with_abstainer(data, rate_by_class=[0.4, 0.1], seed=1), make_model(key), "majority")
    run.run()
    rep = worker_report(run)
    assert rep["interval"].str.startswith("credible").all()
    assert np.all((rep["lower"] <= rep["accuracy"] + 1e-3) & (rep["accuracy"] <= rep["upper"] + 1e-3))
    assert rep["accuracy"].max() < 0.95  # about 1/4 of the answers are "can't tell"


def test_gold_that_is_the_abstain_code_is_dropped_with_a_note(tmp_path):
    """Issue 38 section 4: read_annotations(..., gold=..., abstain='4') raised when some gold labels were '4'."""
    labels, gold = tmp_path / "l.csv", tmp_path / "g.csv"
    labels.write_text("item,worker,label\n1,a,1\n1,b,4\n2,a,2\n2,b,2\n3,a,1\n3,b,1\n4,a,4\n4,b,3\n")
    gold.write_text("item,label\n1,1\n2,4\n3,1\n4,3\n")
    data = read_annotations(labels, gold=gold, abstain="4")
    assert data.class_names == ("1", "2", "3") and data.response_names == ("4",)
    assert data.gold.tolist() == [0, -1, 0, 2]
    assert any("1 gold label is '4'" in n and "no gold" in n for n in data.notes)
    only = tmp_path / "g2.csv"  # a "can't tell" in the gold that no worker gave: dropped too
    only.write_text("item,label\n1,1\n2,unsure\n3,1\n")
    data = read_annotations(labels, gold=only, abstain=["4", "unsure"])
    assert data.gold.tolist() == [0, -1, 0, -1] and "unsure" not in data.class_names
