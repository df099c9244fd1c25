"""The analyst's command line: python -m crowdlab fit FILE --method ds --gold G --out DIR."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd

from crowdlab.cli import main
from crowdlab.samples import sample_paths


def test_fit_writes_posteriors_params_history_and_prints_accuracy(tmp_path, capsys):
    labels, gold = sample_paths("bluebirds")
    code = main(["fit", str(labels), "--method", "ds", "--gold", str(gold), "--out", str(tmp_path)])
    assert code == 0
    post = pd.read_csv(tmp_path / "posteriors.csv")
    assert len(post) == 108 and {"item", "p_0", "p_1", "label", "confidence"} <= set(post.columns)
    assert (post[["p_0", "p_1"]].sum(axis=1) - 1).abs().max() < 1e-9
    assert len(pd.read_csv(tmp_path / "labels.csv")) == 108
    params = json.loads((tmp_path / "params.json").read_text())
    assert len(params["gamma"]) == 39 and len(params["workers"]) == 39
    hist = json.loads((tmp_path / "history.json").read_text())
    objs = [s["objective"] for s in hist["snapshots"]]
    assert hist["converged"] and all(b >= a - 1e-9 * abs(a) for a, b in zip(objs, objs[1:]))
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert abs(metrics["accuracy"] - 97 / 108) < 1e-12
    out = capsys.readouterr().out
    assert "accuracy: 0.8981" in out and "108 items, 39 workers" in out


def test_scores_method_on_continuous_file(tmp_path):
    labels, gold = sample_paths("affect")
    assert main(["fit", str(labels), "--method", "scores", "--gold", str(gold), "--out", str(tmp_path)]) == 0
    post = pd.read_csv(tmp_path / "posteriors.csv")
    assert list(post.columns[:2]) == ["item", "estimate"] and len(post) == 700
    assert "pearson_r" in json.loads((tmp_path / "metrics.json").read_text())


def test_bad_file_prints_message_and_exits_2(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("item,worker\n1,a\n")
    proc = subprocess.run(
        [sys.executable, "-m", "crowdlab", "fit", str(bad), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "bad.csv" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()


def test_a_console_that_cannot_write_theta_gets_an_escape_not_a_traceback(tmp_path):
    labels, _ = sample_paths("bluebirds")
    proc = subprocess.run(
        [sys.executable, "-m", "crowdlab", "fit", str(labels), "--out", str(tmp_path / "o")],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "cp1252", "PYTHONUTF8": "0"},
    )
    assert proc.returncode == 0, proc.stderr.decode("cp1252", "replace")
    assert b"log p(x | \\u03b8)" in proc.stdout


def test_two_coin_on_three_classes_is_a_clear_error(tmp_path, capsys):
    labels, _ = sample_paths("dogs")
    assert main(["fit", str(labels), "--method", "two_coin", "--out", str(tmp_path)]) == 2
    assert "two classes" in capsys.readouterr().err


def test_python_snippet_reproduces_the_run():
    import numpy as np

    import crowdlab as cl
    from crowdlab.export import python_snippet
    from crowdlab.samples import load_sample

    data = load_sample("bluebirds")
    run = cl.fit(data, "ds", init="random", seed=3, prior=0.5)
    code = python_snippet(run, 'load_sample("bluebirds")')
    ns: dict = {}
    exec(code, ns)
    np.testing.assert_array_equal(ns["posterior"], run.posterior)
    assert ns["history"] == run.objective_history()


def test_python_snippet_for_a_simulation():
    import numpy as np

    import crowdlab as cl
    from crowdlab.export import python_snippet
    from crowdlab.simulate import simulate_crowd

    data = simulate_crowd(200, 6, 3, seed=4).annotations
    run = cl.fit(data, "one_coin", hard=True)
    ns: dict = {}
    exec(python_snippet(run, "simulate_crowd(200, 6, 3, seed=4)"), ns)
    np.testing.assert_array_equal(ns["labels"], run.labels())


def test_fit_sequences_with_hmm_writes_viterbi(tmp_path):
    from crowdlab.samples import sample_paths

    labels, gold = sample_paths("ner")
    code = main(["fit", str(labels), "--method", "hmm", "--gold", str(gold), "--out", str(tmp_path), "--max-iter", "5"])
    assert code == 0
    post = pd.read_csv(tmp_path / "posteriors.csv")
    assert len(post) == 39025 and "viterbi" in post and post["item"].iloc[0] == "0:0"
    params = json.loads((tmp_path / "params.json").read_text())
    assert len(params["T"]) == 9 and "pi0" in params


def test_fit_mrf_with_edges(tmp_path):
    data_dir = tmp_path / "in"
    data_dir.mkdir()
    (data_dir / "labels.csv").write_text("item,worker,label\na,w1,x\nb,w1,x\nc,w1,y\na,w2,x\nb,w2,y\nc,w2,y\n")
    (data_dir / "edges.csv").write_text("source,target\na,b\nb,c\n")
    code = main(
        [
            "fit",
            str(data_dir / "labels.csv"),
            "--method",
            "mrf",
            "--edges",
            str(data_dir / "edges.csv"),
            "--e-step",
            "mean_field",
            "--delta",
            "1.5",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code == 0
    assert len(pd.read_csv(tmp_path / "out" / "posteriors.csv")) == 3


def test_mrf_without_edges_is_a_clear_error(tmp_path, capsys):
    labels, _ = sample_paths("bluebirds")
    assert main(["fit", str(labels), "--method", "mrf", "--out", str(tmp_path)]) == 2
    assert "graph" in capsys.readouterr().err


def test_moments_start_for_every_class_method(tmp_path):
    """--init moments works for GLAD and MACE too (it raised TypeError inside the CLI before)."""
    labels, gold = sample_paths("bluebirds")
    for method in ("ds", "glad", "mace", "ibcc"):
        out = tmp_path / method
        args = ["fit", str(labels), "--method", method, "--init", "moments", "--gold", str(gold), "--out", str(out)]
        assert main(args) == 0
        assert json.loads((out / "metrics.json").read_text())["accuracy"] > 0.7


def test_new_methods_and_semi_supervised_options(tmp_path, capsys):
    """--method glad|mace|ibcc run; --reveal 1 fixes every gold item; --known takes a gold-style file."""
    labels, gold = sample_paths("bluebirds")
    for method in ("glad", "mace", "ibcc"):
        out = tmp_path / method
        assert main(["fit", str(labels), "--method", method, "--gold", str(gold), "--out", str(out)]) == 0
        hist = json.loads((out / "history.json").read_text())
        objs = [s["objective"] for s in hist["snapshots"]]
        assert hist["violations"] == [] and all(b >= a - 1e-9 * abs(a) for a, b in zip(objs, objs[1:]))
        assert json.loads((out / "metrics.json").read_text())["accuracy"] > 0.7
    out = tmp_path / "reveal"
    assert main(["fit", str(labels), "--method", "mace", "--gold", str(gold), "--reveal", "1", "--out", str(out)]) == 0
    assert json.loads((out / "metrics.json").read_text())["accuracy"] == 1.0
    assert "108 items keep their known class" in capsys.readouterr().out
    g = pd.read_csv(gold).head(10)
    known = tmp_path / "known.csv"
    g.to_csv(known, index=False)
    out = tmp_path / "known"
    assert main(["fit", str(labels), "--method", "ds", "--known", str(known), "--out", str(out)]) == 0
    post = pd.read_csv(out / "labels.csv").set_index("item")
    assert (post.loc[g.iloc[:, 0], "label"].astype(str).to_numpy() == g.iloc[:, 1].astype(str).to_numpy()).all()
    bad = tmp_path / "bad.csv"
    bad.write_text("item,label\nnot_an_item,1\n")
    assert main(["fit", str(labels), "--known", str(bad), "--out", str(tmp_path / "bad")]) == 2


def test_usage_line_says_crowdlab_when_run_as_crowdlab(monkeypatch, capsys):
    from crowdlab.cli import build_parser, prog_name

    assert prog_name("/venv/bin/crowdlab") == "crowdlab"
    assert prog_name("crowdlab.exe") == "crowdlab" and prog_name("crowdlab-script.py") == "crowdlab"
    assert prog_name("/repo/crowdlab/__main__.py") == "python -m crowdlab"
    assert prog_name("") == "python -m crowdlab"
    monkeypatch.setattr(sys, "argv", ["/home/me/.local/bin/crowdlab", "--help"])
    assert build_parser().format_usage().startswith("usage: crowdlab ")
    monkeypatch.setattr(sys, "argv", ["/repo/crowdlab/__main__.py"])
    assert build_parser().format_usage().startswith("usage: python -m crowdlab ")


def test_python_m_crowdlab_usage_line():
    proc = subprocess.run([sys.executable, "-m", "crowdlab", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: python -m crowdlab ")


def test_workers_csv_is_the_worker_report_and_the_stop_reason_is_said(tmp_path, capsys):
    labels, gold = sample_paths("bluebirds")
    out = tmp_path / "ds"
    assert main(["fit", str(labels), "--gold", str(gold), "--out", str(out)]) == 0
    w = pd.read_csv(out / "workers.csv")
    for col in ("accuracy", "lower", "upper", "worst_confusion", "spammer_score", "agreement"):
        assert col in w, col
    assert ((w["lower"] <= w["accuracy"] + 1e-9) & (w["accuracy"] <= w["upper"] + 1e-9)).all()
    assert w["spammer_score"].between(0, 1).all()
    text = capsys.readouterr().out
    assert "stopped: converged" in text and "Krippendorff's alpha" in text
    assert json.loads((out / "history.json").read_text())["stop_reason"] == "converged"


def test_tie_break_rules_change_only_the_tied_items(tmp_path):
    # items a and c are tied (one "x", one "y"); b is not; "y" is the most frequent class overall
    labels = tmp_path / "ties.csv"
    rows = ["item,worker,label", "a,u,x", "a,v,y", "b,u,y", "b,v,y", "b,w,y", "c,v,y", "c,w,x"]
    rows += [f"t{n},w{n % 3},{'xy'[n % 2]}" for n in range(40)]  # 40 untied items, one label each
    labels.write_text("\n".join(rows) + "\n")
    got = {}
    for rule, seed in (("frequent", 0), ("first", 0)) + tuple(("random", s) for s in range(8)):
        out = tmp_path / f"{rule}{seed}"
        argv = ["fit", str(labels), "--method", "mv", "--tie-break", rule, "--tie-seed", str(seed), "--out", str(out)]
        assert main(argv) == 0
        got[rule, seed] = pd.read_csv(out / "labels.csv").set_index("item")["label"]
    base = got["frequent", 0]
    assert base["a"] == "y" and base["c"] == "y"  # the most frequent class
    assert got["first", 0]["a"] == "x" and got["first", 0]["c"] == "y"  # the first label given to each item
    for lab in got.values():
        assert lab.drop(["a", "c"]).equals(base.drop(["a", "c"]))  # untied items never move
    randoms = {tuple(got["random", s][["a", "c"]]) for s in range(8)}
    assert len(randoms) > 1  # the seed matters


def test_class_prior_option_for_mace_and_a_clear_error_elsewhere(tmp_path, capsys):
    labels, gold = sample_paths("simulated")  # classes 50/32/19 %
    acc = {}
    for choice in ("uniform", "estimate"):
        out = tmp_path / choice
        argv = ["fit", str(labels), "--method", "mace", "--class-prior", choice, "--gold", str(gold), "--out", str(out)]
        assert main(argv) == 0
        acc[choice] = json.loads((out / "metrics.json").read_text())["accuracy"]
        pi = json.loads((out / "params.json").read_text())["pi"]
        assert (max(pi) - min(pi) < 1e-12) == (choice == "uniform")
    assert acc["estimate"] > acc["uniform"] + 0.015  # 0.942 against 0.920
    capsys.readouterr()
    argv = ["fit", str(labels), "--method", "ds", "--class-prior", "estimate", "--out", str(tmp_path / "ds")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--class-prior applies to --method glad, mace, mace_vb only" in err and "Traceback" not in err
