"""The malformed-and-adversarial corpus (tests/data/corpus, see make_corpus.py) through the reader and the CLI.

Every file either loads to exactly the expected observations with exactly the expected notes, or raises
`DataError` mentioning the expected fragments: no other exception, no traceback from the CLI, each under 10 s.
The big files (1 MB without a line break, 100,000 and 300,000 columns) are built here. The app's upload runs
the same manifest in tests/app/test_corpus_app.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from crowdlab.cli import main
from crowdlab.errors import DataError
from crowdlab.io.data import read_annotations, read_gold, read_sequence_gold, read_sequences
from crowdlab.io.features import read_features
from crowdlab.io.graph import read_edges

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
SECONDS = 10.0  # CPU seconds of this process (time.process_time): what a file costs, whatever else the machine runs


def big_file(name: str) -> bytes:
    """The big corpus files, built from a few lines instead of committed megabytes."""
    if name == "no_newline_1mb.csv":
        return b"x" * 1_000_000
    if name == "no_newline_1mb_commas.csv":
        return b"item,worker,label" + b",c" * 500_000
    if name == "no_newline_1mb_long_cell.csv":
        return b"item,worker,label," + b"x" * 1_000_000
    n = 100_000 if name == "wide_100k_workers.csv" else 300_000
    header = "item," + ",".join(f"w{k}" for k in range(n))
    rows = [f"i{r}," + ",".join("xy"[(k + r) % 2] for k in range(n)) for r in range(2)]
    return ("\n".join([header, *rows]) + "\n").encode()


def read(entry: dict, source, *, where: str = "python"):
    """Read a corpus entry with the reader of its kind."""
    kind, options = entry["kind"], entry.get("options", {})
    if kind == "labels":
        return read_annotations(source, where=where, **options)
    if kind == "sequences":
        return read_sequences(source, where=where)
    base = CORPUS / entry["base"]
    if kind == "gold":
        return read_gold(source, read_annotations(base), where=where)
    if kind == "sequence_gold":
        return read_sequence_gold(source, read_sequences(base), where=where)
    if kind == "edges":
        return read_edges(source, read_annotations(base), where=where)
    if kind == "features":
        return read_features(source, read_annotations(base), where=where)
    raise AssertionError(kind)


def check_loaded(result, expect: dict) -> None:
    """The exact count, counts and notes of a file that should load."""
    if hasattr(result, "X"):  # features
        assert result.n_items == expect["loads"]
        notes = result.notes
    elif result.graph is not None:
        assert result.graph.nnz // 2 == expect["loads"]
        notes = result.notes
    else:
        assert result.n_obs == expect["loads"]
        notes = result.notes
        if "classes" in expect:
            assert result.n_classes == expect["classes"]
        if "workers" in expect:
            assert result.n_workers == expect["workers"]
        if "continuous" in expect:
            assert result.is_continuous == expect["continuous"]
        if "gold" in expect:
            assert int(result.gold_mask.sum()) == expect["gold"]
        assert np.isfinite(result.value).all() if result.is_continuous else True
    # exactly one note per expected fragment: nothing reinterpreted without a word, no surprise notes
    assert len(notes) == len(expect["notes"]), notes
    for fragment in expect["notes"]:
        assert any(fragment in n for n in notes), (fragment, notes)


def check_error(exc: DataError, expect: dict) -> None:
    for fragment in expect["error"]:
        assert fragment in str(exc), (fragment, str(exc))


ENTRIES = [pytest.param(e, id=e["file"]) for e in MANIFEST["files"]]
BIG = [pytest.param(name, expect, id=name) for name, expect in MANIFEST["big"].items()]


def test_the_corpus_is_large_and_covers_every_kind():
    assert len(MANIFEST["files"]) + len(MANIFEST["big"]) >= 100
    kinds = {e["kind"] for e in MANIFEST["files"]}
    assert kinds == {"labels", "gold", "sequences", "sequence_gold", "edges", "features"}


@pytest.mark.parametrize("entry", ENTRIES)
def test_reader(entry):
    t0 = time.process_time()
    try:
        result = read(entry, CORPUS / entry["file"])
    except DataError as exc:
        assert "error" in entry["expect"], f"unexpected DataError: {exc}"
        check_error(exc, entry["expect"])
    else:
        assert "loads" in entry["expect"], f"loaded, expected an error mentioning {entry['expect']['error']}"
        check_loaded(result, entry["expect"])
    assert time.process_time() - t0 < SECONDS


@pytest.mark.parametrize("name, expect", BIG)
def test_big_files(name, expect):
    data = big_file(name)
    t0 = time.process_time()
    try:
        result = read_annotations(data)
    except DataError as exc:
        assert "error" in expect, f"unexpected DataError: {exc}"
        check_error(exc, expect)
    else:
        assert "loads" in expect
        check_loaded(result, expect)
    assert time.process_time() - t0 < SECONDS


def cli_args(entry: dict, out: Path) -> list[str] | None:
    """The command line that reads this entry (None for features: the CLI has no features option)."""
    kind, file = entry["kind"], str(CORPUS / entry["file"])
    expect = entry["expect"]
    method = "scores" if expect.get("continuous") else "ds"
    if kind == "labels":
        args = ["fit", file, "--method", method]
        if "kind" in entry.get("options", {}):
            args += ["--kind", entry["options"]["kind"]]
    elif kind == "gold":
        base = CORPUS / entry["base"]
        method = "scores" if "score" in base.read_text() else "ds"
        args = ["fit", str(base), "--gold", file, "--method", method]
    elif kind == "sequences":
        args = ["fit", file, "--method", "hmm"]
    elif kind == "sequence_gold":
        args = ["fit", str(CORPUS / entry["base"]), "--gold", file, "--method", "hmm"]
    elif kind == "edges":
        args = ["fit", str(CORPUS / entry["base"]), "--edges", file, "--method", "mrf"]
    else:
        return None
    return args + ["--out", str(out), "--max-iter", "20"]


@pytest.mark.parametrize("entry", ENTRIES)
def test_cli(entry, tmp_path, capsys):
    args = cli_args(entry, tmp_path)
    if args is None:
        pytest.skip("the CLI reads no features file")
    t0 = time.process_time()
    code = main(args)  # any exception other than a handled DataError fails the test: a traceback
    out, err = capsys.readouterr()
    assert time.process_time() - t0 < SECONDS
    if "error" in entry["expect"]:
        assert code == 2 and err.startswith("error: ")
        for fragment in entry["expect"]["error"]:
            assert fragment in err, (fragment, err)
    else:
        assert code == 0, err
        for fragment in entry["expect"]["notes"]:
            if fragment == "continuous scores" and "scores" in args:
                continue  # --method scores reads scores by itself: nothing was guessed
            assert "note: " in out and fragment in out, (fragment, out)
        for written in tmp_path.glob("*.json"):
            assert "NaN" not in written.read_text() and "Infinity" not in written.read_text()


def test_cli_hints_use_command_line_spelling(tmp_path, capsys):
    assert main(["fit", str(CORPUS / "classes_1000.csv"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--kind continuous" in err and 'kind="continuous"' not in err
