"""Issue 41, section 4: the command line as people use it (progress bars, sample names, no --out, headerless files,
MTurk batch files, continuous scores, shell completion)."""

from __future__ import annotations

import io
import os
import sys

import pandas as pd
import pytest

import crowdlab as cl
from crowdlab.cli import main
from crowdlab.engines.progress import ProgressBar, as_callback, on_terminal
from crowdlab.errors import DataError
from crowdlab.io.data import ColumnsUnclear, read_annotations
from crowdlab.io.samples import sample_paths


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


# ---------------------------------------------------------------------- progress
def _fit_with_stderr(monkeypatch, stream, *extra: str) -> str:
    monkeypatch.setattr("sys.stderr", stream)
    labels, _ = sample_paths("simulated")
    assert main(["fit", str(labels), "--max-iter", "40", *extra]) == 0
    return stream.getvalue()


def test_a_terminal_gets_a_progress_bar(monkeypatch, capsys):
    err = _fit_with_stderr(monkeypatch, _Terminal())
    assert "EM:" in err and "/40" in err and "iteration/s" in err
    assert "EM: 40 iterations" in capsys.readouterr().out  # the summary still says it, on stdout


def test_a_pipe_or_quiet_gets_no_bar(monkeypatch):
    assert _fit_with_stderr(monkeypatch, _Pipe()) == ""
    assert _fit_with_stderr(monkeypatch, _Terminal(), "--quiet") == ""
    assert not on_terminal(_Pipe()) and on_terminal(_Terminal())


def test_the_stream_engine_draws_its_bars_too(monkeypatch, tmp_path):
    err = _fit_with_stderr(monkeypatch, _Terminal(), "--stream", "--out", str(tmp_path))
    assert "reading" in err and "EM:" in err


def test_estimators_take_progress(capsys):
    df = pd.read_csv(sample_paths("bluebirds")[0])
    seen = []
    ds = cl.DawidSkene(progress=lambda done, total: seen.append((done, total))).fit(df)
    done = [d for d, _ in seen]  # accelerated EM reports its EM-map evaluations, a few at a time
    assert done == sorted(set(done)) and done[-1] == ds.n_iter_ and {t for _, t in seen} == {10000}
    capsys.readouterr()
    cl.DawidSkene(progress=True, max_iter=7).fit(df)
    assert "7/7" in capsys.readouterr().err
    assert "progress" not in repr(cl.DawidSkene()) and cl.DawidSkene().get_params()["progress"] is False
    with pytest.raises(TypeError, match="progress must be"):
        cl.DawidSkene(progress="yes")


def test_fit_takes_progress_true(capsys):
    """``cl.fit(data, progress=True)`` draws the bar as the estimators do (one bar, also over EBCC's restarts)."""
    data = cl.load_sample("bluebirds")
    run = cl.fit(data, "ds", progress=True, max_iter=7, accelerate=False)
    assert "7/7" in capsys.readouterr().err and run.last.iteration == 7
    cl.fit(data, "ds", progress=False, max_iter=3)
    assert capsys.readouterr().err == ""
    with pytest.raises(TypeError, match="progress must be"):
        cl.fit(data, "ds", progress="yes")


def test_a_bar_ends_at_what_was_done_and_costs_nothing_off():
    stream = _Terminal()
    with ProgressBar(file=stream, leave=True) as bar:
        for t in range(1, 13):
            bar(t, 500)
    assert "12/12" in stream.getvalue()  # converged at 12 of at most 500: the bar ends full
    assert as_callback(False) == (None, None) and as_callback(None) == (None, None)
    f = lambda done, total: None  # noqa: E731
    assert as_callback(f) == (f, None)


# ---------------------------------------------------------------------- sample names, no --out
def test_a_sample_name_is_read_with_its_gold_and_without_out_prints_labels(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no file called bluebirds here
    assert main(["fit", "bluebirds"]) == 0
    out = capsys.readouterr().out
    assert "'bluebirds' is a bundled sample" in out and "accuracy: 0.8981" in out
    assert "labels (the first 10 of 108" in out and "item label  confidence" in out and "11573" in out
    assert list(tmp_path.iterdir()) == []  # nothing written without --out


def test_a_sample_name_with_out_writes_the_files(tmp_path, capsys):
    assert main(["fit", "bluebirds", "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "labels.csv").is_file() and (tmp_path / "r" / "metrics.json").is_file()


def test_a_path_that_is_not_there_is_still_refused(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "bluebirds" / "labels.csv")]) == 2
    assert "bundled sample" in capsys.readouterr().err


def test_the_engines_need_out(capsys):
    assert main(["fit", "bluebirds", "--stream"]) == 2
    assert "give --out DIR" in capsys.readouterr().err


def test_scores_without_out_print_the_estimates(capsys):
    assert main(["fit", "affect", "--method", "scores"]) == 0
    assert "item  estimate" in capsys.readouterr().out


# ---------------------------------------------------------------------- a header row that is data
def test_a_headerless_file_gets_a_note(tmp_path, capsys):
    f = tmp_path / "noheader.csv"
    f.write_text("266,A19IBSKBTABMR3,1\n266,A2,0\n267,A19IBSKBTABMR3,0\n267,A2,1\n268,A3,1\n268,A2,1\n")
    ann = read_annotations(f)
    assert ann.n_obs == 5
    assert any(n.startswith("Row 1 ('266,A19IBSKBTABMR3,1') looks like a label") for n in ann.notes)
    assert main(["fit", str(f), "--method", "mv"]) == 0
    assert "note: Row 1 ('266,A19IBSKBTABMR3,1') looks like a label" in capsys.readouterr().out


def test_a_real_header_gets_no_such_note(tmp_path):
    f = tmp_path / "ok.csv"
    f.write_text("q,w,a\n266,A1,1\n266,A2,0\n267,A1,0\n267,A2,1\n")
    assert not any("looks like a label" in n for n in read_annotations(f).notes)
    for key in ("bluebirds", "rte"):
        assert not any("looks like a label" in n for n in read_annotations(sample_paths(key)[0]).notes)


# ---------------------------------------------------------------------- MTurk batch files
MTURK = (
    "HITId,HITTypeId,Title,AssignmentId,WorkerId,AssignmentStatus,WorkTimeInSeconds,Input.sentence1,"
    "Input.sentence2,Answer.entails{more},Approve,Reject\n"
    "H1,T,RTE,A1,W1,Submitted,12,a cat sat,a cat,yes{x},,\n"
    "H1,T,RTE,A2,W2,Submitted,10,a cat sat,a cat,yes{x},,\n"
    "H1,T,RTE,A3,W3,Submitted,9,a cat sat,a cat,no{x},,\n"
    "H2,T,RTE,A4,W1,Submitted,12,dogs bark,cats bark,no{x},,\n"
    "H2,T,RTE,A5,W2,Submitted,11,dogs bark,cats bark,no{x},,\n"
    "H2,T,RTE,A6,W3,Submitted,8,dogs bark,cats bark,yes{x},,\n"
)


def test_an_mturk_batch_file_is_read_by_its_names(tmp_path):
    f = tmp_path / "Batch_123_batch_results.csv"
    f.write_text(MTURK.format(more="", x=""))
    ann = read_annotations(f)
    assert ann.columns[:3] == ("HITId", "WorkerId", "Answer.entails")
    assert ann.item_names == ("H1", "H2") and ann.worker_names == ("W1", "W2", "W3")
    assert ann.class_names == ("no", "yes") and ann.n_obs == 6


def test_several_answer_columns_ask_which(tmp_path, capsys):
    f = tmp_path / "batch.csv"
    f.write_text(MTURK.format(more=",Answer.comment", x=",fine"))
    with pytest.raises(ColumnsUnclear, match="2 answer columns") as e:
        read_annotations(f)
    assert "columns='HITId,WorkerId,Answer.entails'" in str(e.value)
    assert main(["fit", str(f), "--method", "mv"]) == 2
    assert "--columns HITId,WorkerId,Answer.entails" in capsys.readouterr().err
    ann = read_annotations(f, columns="HITId,WorkerId,Answer.entails")
    assert ann.class_names == ("no", "yes") and any("'Answer.comment'" in n for n in ann.notes)  # named as ignored


def test_camel_case_names_are_the_aliases(tmp_path):
    f = tmp_path / "camel.csv"
    f.write_text("TaskId,WorkerId,Label\nt1,w1,a\nt1,w2,b\nt2,w1,a\n")
    assert read_annotations(f).columns[:3] == ("TaskId", "WorkerId", "Label")


# ---------------------------------------------------------------------- continuous scores refused by DS
def test_scores_refused_by_a_class_method_name_the_scores_method(capsys):
    assert main(["fit", "affect", "--method", "ds"]) == 2
    err = capsys.readouterr().err
    assert "needs class labels" in err and "--method scores" in err
    with pytest.raises(Exception, match='method="scores"'):
        cl.fit(read_annotations(sample_paths("affect")[0]), "ds")


def test_data_error_is_still_what_a_bad_file_raises(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("HITId,WorkerId\nH1,W1\n")
    with pytest.raises(DataError):
        read_annotations(f)


# ---------------------------------------------------------------------- shell completion
def _complete(line: str) -> list[str]:
    argcomplete = pytest.importorskip("argcomplete")
    from crowdlab.cli import build_parser

    class _Finder(argcomplete.CompletionFinder):
        def _init_debug_stream(self):  # not fd 9, which may be pytest's (its faulthandler's copy of stderr)
            pass

    env = {"_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)), "_ARGCOMPLETE_IFS": "\n"}
    out = io.StringIO()
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        _Finder()(build_parser(), output_stream=out, exit_method=lambda code: None)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return [w.strip() for w in out.getvalue().split("\n") if w.strip()]


def test_completion_of_options_methods_and_samples():
    assert _complete("crowdlab fit --meth") == ["--method"]
    assert "online_ds" in _complete("crowdlab fit x --method o")
    assert _complete("crowdlab fit blue") == ["bluebirds"]
    assert _complete("crowdlab comp") == ["compare", "completion"]
    assert _complete("crowdlab compl") == ["completion"]


def test_completion_prints_the_shell_code(capsys):
    pytest.importorskip("argcomplete")
    assert main(["completion", "bash"]) == 0
    out = capsys.readouterr().out
    assert "complete" in out and "crowdlab" in out


def test_the_stream_engine_reads_an_mturk_file(tmp_path, capsys):
    f = tmp_path / "batch.csv"
    f.write_text(MTURK.format(more="", x=""))
    assert main(["fit", str(f), "--method", "mv", "--stream", "--out", str(tmp_path / "o")]) == 0
    assert "2 items, 3 workers, 6 labels" in capsys.readouterr().out


def test_without_tqdm_a_fit_runs_without_a_bar(monkeypatch):
    for name in ("tqdm", "tqdm.auto"):
        monkeypatch.setitem(sys.modules, name, None)
    stream = _Terminal()
    bar = ProgressBar(file=stream)
    bar(1, 10)
    bar(2, 10)
    bar.close()
    assert stream.getvalue() == "" and bar.off


# ---------------------------------------------------------------------- pandas 2.x
def test_floats_are_read_correctly_rounded_whatever_the_pandas():
    """pd.to_numeric under pandas 2.2 misreads ~40% of these by one ulp; the readers parse with Arrow instead."""
    import numpy as np

    from crowdlab.io.readers import to_floats

    rng = np.random.default_rng(0)
    strings = [repr(float(v)) for v in rng.random(5000) * 10.0 ** rng.integers(-300, 300, 5000)]
    assert np.array_equal(to_floats(np.array(strings, dtype=object)), [float(s) for s in strings])
    odd = ["1", "+3", ".5", "5.", "1E-5", "-Infinity", "NaN", " 2 ", "1_000", "0x10", "abc", "", "١", "1,5", None]
    want = [1, 3, 0.5, 5, 1e-5, -np.inf, np.nan, 2, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan]
    np.testing.assert_array_equal(to_floats(np.array(odd, dtype=object)), want)


def test_an_mturk_dataframe_goes_into_the_estimators(tmp_path):
    f = tmp_path / "batch.csv"
    f.write_text(MTURK.format(more="", x=""))
    labels = cl.aggregate(pd.read_csv(f), "mv")
    assert labels.index.name == "HITId" and list(labels.index) == ["H1", "H2"]
    f.write_text(MTURK.format(more=",Answer.comment", x=",fine"))
    with pytest.raises(DataError, match="2 label columns"):
        cl.aggregate(pd.read_csv(f), "mv")
