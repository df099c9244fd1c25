"""The analyst's command line: python -m crowdlab fit FILE --method ds --gold G --out DIR."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from crowdlab.cli import main
from crowdlab.io.samples import sample_paths


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
    assert b"log p(F | \\u03b8)" in proc.stdout


def test_two_coin_on_three_classes_is_a_clear_error(tmp_path, capsys):
    labels, _ = sample_paths("dogs")
    assert main(["fit", str(labels), "--method", "two_coin", "--out", str(tmp_path)]) == 2
    assert "two classes" in capsys.readouterr().err


def test_gold_of_other_numbers_reads_scores_and_the_error_says_how_to_read_classes(tmp_path, capsys):
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "item,worker,label\n" + "".join(f"i{i},w{w},{(i + w) % 3 + 1}\n" for i in range(8) for w in range(3))
    )
    gold = tmp_path / "gold.csv"
    gold.write_text("item,label\n" + "".join(f"i{i},{1.5 + i / 10}\n" for i in range(8)))
    assert main(["fit", str(labels), "--gold", str(gold), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        "error: Dawid-Skene needs class labels; this dataset has continuous scores. The good/bad annotators model "
        "fits them: --method scores. Read the labels"
    )
    assert "not among them (e.g. '1.5')" in err and err.endswith("use --kind classes.") and "\n" not in err
    assert main(["fit", str(labels), "--kind", "classes", "--out", str(tmp_path / "o")]) == 0


def test_options_the_run_does_not_read_are_named_in_one_warning(tmp_path, capsys):
    labels, _ = sample_paths("bluebirds")
    args = ["fit", str(labels), "--out", str(tmp_path / "o"), "--passes", "3", "--chunk-rows", "5", "--tie-seed", "2"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "warning: ignored, this run does not use them: --passes (applies to --method online_ds / online_one_coin); "
        "--tie-seed (applies to --method mv); --chunk-rows (applies to --stream (--engine stream))."
    ]
    assert "4,212 labels" in captured.out
    assert main(["fit", str(labels), "--out", str(tmp_path / "o"), "--method", "mv", "--tie-seed", "2"]) == 0
    assert capsys.readouterr().err == ""  # used: no warning


def test_python_snippet_reproduces_the_run():
    import numpy as np

    import crowdlab as cl
    from crowdlab.analysis.export import python_snippet
    from crowdlab.io.samples import load_sample

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
    from crowdlab.analysis.export import python_snippet
    from crowdlab.teaching.simulate import simulate_crowd

    data = simulate_crowd(200, 6, 3, seed=4).annotations
    run = cl.fit(data, "one_coin", hard=True)
    ns: dict = {}
    exec(python_snippet(run, "simulate_crowd(200, 6, 3, seed=4)"), ns)
    np.testing.assert_array_equal(ns["labels"], run.labels())


def test_fit_sequences_with_hmm_writes_viterbi(tmp_path):
    from crowdlab.io.samples import sample_paths

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


BAD_OPTIONS = [
    (["--prior", "-1"], "--prior"),
    (["--prior", "nan"], "--prior"),
    (["--reveal", "2"], "--reveal"),
    (["--reveal", "nan"], "--reveal"),
    (["--method", "ibcc", "--hard"], "--hard"),
    (["--method", "mace_vb", "--hard"], "--hard"),
    (["--method", "online_ds", "--passes", "0"], "--passes"),
    (["--method", "online_ds", "--batch-size", "0"], "--batch-size"),
    (["--method", "online_ds", "--buckets", "0"], "--buckets"),
    (["--method", "online_ds", "--tau0", "-5"], "--tau0"),
    (["--method", "online_ds", "--tau0", "inf"], "--tau0"),
    (["--method", "online_ds", "--eta0", "-1"], "--eta0"),
    (["--method", "online_ds", "--eta0", "nan"], "--eta0"),
    (["--method", "online_ds", "--rho", "nan"], "--rho"),
    (["--method", "online_ds", "--rho", "inf"], "--rho"),
    (["--method", "online_ds", "--known", "GOLD"], "--known"),
    (["--method", "online_ds", "--reveal", "0.5"], "--reveal"),
    (["--init", "random", "--seed", "-1"], "--seed"),
    (["--method", "mv", "--tie-break", "random", "--tie-seed", "-1"], "--tie-seed"),
    (["--reveal", "0.5", "--reveal-seed", "-1"], "--reveal-seed"),
    (["--stream", "--chunk-rows", "0"], "--chunk-rows"),
    (["--engine", "dask", "--npartitions", "0"], "--npartitions"),
    (["--tol", "nan"], "--tol"),
    (["--tol", "-1"], "--tol"),
    (["--stream", "--tol", "-1"], "--tol"),
    (["--max-iter", "-5"], "--max-iter"),
    (["--method", "mrf", "--delta", "nan"], "--delta"),
]


@pytest.mark.parametrize(("options", "named"), BAD_OPTIONS, ids=[" ".join(o) for o, _ in BAD_OPTIONS])
def test_an_option_out_of_range_is_a_one_line_error_before_anything_is_written(tmp_path, capsys, options, named):
    labels, gold = sample_paths("bluebirds")
    options = [str(gold) if o == "GOLD" else o for o in options]
    out = tmp_path / "out"
    assert main(["fit", str(labels), "--gold", str(gold), *options, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and named in err, err
    assert not out.exists()


def test_rho_outside_the_robbins_monro_range_warns_and_runs(tmp_path, capsys):
    labels, _ = sample_paths("bluebirds")
    argv = ["fit", str(labels), "--method", "online_ds", "--rho", "0.3", "--passes", "1", "--out", str(tmp_path)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "warning: --rho 0.3 is outside (0.5, 1]" in captured.err
    assert "online EM: 1 pass, 11 updates;" in captured.out
    argv = ["fit", str(labels), "--method", "online_ds", "--passes", "1", "--out", str(tmp_path / "in_range")]
    assert main(argv) == 0  # the default 0.6: no warning
    assert "warning" not in capsys.readouterr().err


def _copy_inputs(folder):
    folder.mkdir()
    labels, gold = sample_paths("bluebirds")
    (folder / "labels.csv").write_bytes(labels.read_bytes())
    (folder / "gold.csv").write_bytes(gold.read_bytes())
    return folder / "labels.csv", folder / "gold.csv"


@pytest.mark.parametrize("engine", [[], ["--stream"]], ids=["memory", "stream"])
def test_out_folder_that_holds_the_input_is_refused_and_nothing_is_written(tmp_path, capsys, monkeypatch, engine):
    labels, gold = _copy_inputs(tmp_path / "data")
    before = labels.read_bytes()
    monkeypatch.chdir(labels.parent)
    assert main(["fit", "labels.csv", *engine, "--out", "."]) == 2  # the audit's case: --out the input's folder
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "would overwrite the input labels.csv" in err and "Traceback" not in err
    assert labels.read_bytes() == before
    assert sorted(p.name for p in labels.parent.iterdir()) == ["gold.csv", "labels.csv"]


def test_every_input_is_protected_also_through_a_link_or_another_spelling(tmp_path, capsys):
    labels, gold = _copy_inputs(tmp_path / "data")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # gold read from a previous run's labels.csv; known classes from the folder's labels.csv, spelt via ".."
    (elsewhere / "labels.csv").write_bytes(gold.read_bytes())
    cases = [
        (["--gold", str(elsewhere / "labels.csv")], elsewhere),
        (["--known", str(elsewhere / "labels.csv")], elsewhere / ".." / "elsewhere"),
    ]
    try:
        (elsewhere / "workers.csv").symlink_to(labels)
        cases.append(([], elsewhere))  # workers.csv would be written through the link onto labels.csv
    except OSError:  # no symlinks here (Windows without the privilege)
        pass
    for options, out in cases:
        snapshot = {p: p.read_bytes() for p in (labels, gold, elsewhere / "labels.csv")}
        assert main(["fit", str(labels), *options, "--out", str(out)]) == 2, options
        err = capsys.readouterr().err
        assert "would overwrite the input" in err and "nothing was written" in err, err
        assert all(p.read_bytes() == b for p, b in snapshot.items())
        assert not (elsewhere / "posteriors.csv").exists()


@pytest.mark.parametrize("out", ["ok.csv", "ok.csv/sub"])
def test_out_that_is_a_file_is_a_clear_error(tmp_path, capsys, monkeypatch, out):
    labels, _ = sample_paths("bluebirds")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.csv").write_text("keep me\n")
    assert main(["fit", str(labels), "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out ") and err.count("\n") == 1, err
    assert ("ok.csv is a file" if out == "ok.csv" else "lies under the file ok.csv") in err
    assert (tmp_path / "ok.csv").read_text() == "keep me\n"


@pytest.mark.parametrize("engine", [[], ["--stream"]], ids=["memory", "stream"])
def test_the_closing_line_lists_only_the_files_this_run_wrote(tmp_path, capsys, engine):
    labels, _ = sample_paths("bluebirds")
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "metrics.json").write_text("{}")  # from an earlier run with --gold: not written this time
    assert main(["fit", str(labels), *engine, "--out", str(tmp_path)]) == 0
    wrote = [line for line in capsys.readouterr().out.splitlines() if line.startswith("wrote ")]
    assert wrote == [f"wrote history.json, labels.csv, params.json, posteriors.csv, workers.csv to {tmp_path}"]


def test_counts_of_one_are_singular(tmp_path, capsys):
    labels, gold = sample_paths("bluebirds")
    known = tmp_path / "known.csv"
    pd.read_csv(gold).head(1).to_csv(known, index=False)
    argv = ["fit", str(labels), "--known", str(known), "--max-iter", "1", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "EM: 1 iteration;" in out and "1 item keeps its known class (it counts" in out
    assert "1 iterations" not in out and "1 items" not in out


@pytest.mark.parametrize("engine", [None, "stream"])
def test_a_reused_out_folder_keeps_no_file_of_an_earlier_run(tmp_path, capsys, engine):
    """Audit: GLAD with --gold, then Dawid-Skene without it into the same folder: every file was rewritten but
    GLAD's metrics.json (accuracy 0.8228) stayed beside them, and read as Dawid-Skene's."""
    labels, gold = sample_paths("bluebirds")
    assert main(["fit", str(labels), "--method", "glad", "--gold", str(gold), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "metrics.json").is_file()
    (tmp_path / "notes.txt").write_text("the analyst's own file")
    capsys.readouterr()
    again = ["fit", str(labels), "--method", "ds", "--out", str(tmp_path)] + (["--engine", engine] if engine else [])
    assert main(again) == 0
    assert not (tmp_path / "metrics.json").exists()
    assert (tmp_path / "notes.txt").read_text() == "the analyst's own file"  # only crowdlab's own file names go
    assert json.loads((tmp_path / "history.json").read_text())["method"] == "ds"
    out = capsys.readouterr().out
    assert f"note: removed metrics.json from {tmp_path}" in out
    assert main(again) == 0 and "note: removed" not in capsys.readouterr().out  # nothing stale the second time


def test_the_iteration_limit_comes_with_what_to_try(tmp_path, capsys):
    """Audit: TREC's Dawid-Skene printed 'stopped at the iteration limit' after 10,000 iterations and no hint;
    a prior of 1 converges there in 552."""
    labels, _ = sample_paths("bluebirds")
    assert main(["fit", str(labels), "--method", "ds", "--max-iter", "3", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "stopped: stopped at the iteration limit before converging" in out
    assert "hint: raise --max-iter (now 3), or give a prior (e.g. --prior 1" in out
    assert main(["fit", str(labels), "--method", "ds", "--prior", "1", "--max-iter", "3", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "hint: raise --max-iter (now 3)\n" in out  # a prior is already there
    assert main(["fit", str(labels), "--method", "ds", "--out", str(tmp_path)]) == 0
    assert "hint:" not in capsys.readouterr().out  # converged
