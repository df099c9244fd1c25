"""Issue 42's doors in the core: one exception class for an option out of its range (§8), the limit hints (§7),
and a CSV cell holding a bare CR is quoted (§6)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.errors import ModelError
from crowdlab.models import make_model
from crowdlab.models.baselines import zero_based_skill
from crowdlab.teaching.simulate import simulate_crowd


@pytest.fixture(scope="module")
def data():
    return simulate_crowd(20, 4, 2, seed=1).annotations


@pytest.mark.parametrize(
    "make",
    [
        lambda d: zero_based_skill(d, lr=3.0),
        lambda d: zero_based_skill(d, lr_factor=2.0),
        lambda d: make_model("online_ds", rho=1.5),
        lambda d: make_model("online_ds", eta0=50.0),
        lambda d: make_model("online_ds", eta0=float("nan")),
        lambda d: make_model("online_ds", init_accuracy=1.5),
        lambda d: make_model("online_ds", init_accuracy=0.3).check(d),  # at or below chance for K = 2
        lambda d: make_model("ds", prior=-1),
        lambda d: make_model("mace", class_prior="nope"),
        lambda d: make_model("ebcc", subtypes=0),
        lambda d: make_model("glad", prior=-1),
        lambda d: make_model("ordinal", hard=True),
    ],
)
def test_an_option_out_of_its_range_is_a_model_error_everywhere(data, make):
    """Issue 42 §8: ZBS's lr and online EM's rho and eta0 raised ValueError, init_accuracy ModelError; now every
    model says ModelError (a ValueError, so ``except ValueError`` still catches it)."""
    with pytest.raises(ModelError) as info:
        make(data)
    assert isinstance(info.value, ValueError) and str(info.value)


def test_no_model_module_raises_a_bare_value_error():
    import pathlib
    import re

    import crowdlab.models

    folder = pathlib.Path(crowdlab.models.__file__).parent
    bare = [p.name for p in folder.glob("*.py") if re.search(r"raise ValueError\(", p.read_text())]
    assert bare == []


def test_the_limit_hints_say_how_to_raise_the_limit_once():
    """Issue 42 §7: 'or raise the limit: To raise the limit' (scores) and 'set crowdlab_max_file_mb' (size)."""
    import crowdlab as cl
    from crowdlab.errors import DataError
    from crowdlab.io import limits

    with pytest.raises(DataError) as info:
        cl.read_annotations(b"item,worker,score\n1,a,1e13\n2,b,0.5\n", kind="continuous")
    msg = str(info.value)
    assert "raise the limit: To raise" not in msg and msg.count("To raise the limit") == 1, msg
    with limits.override(max_file_mb=1e-6), pytest.raises(DataError) as info:
        cl.read_annotations(b"item,worker,label\n" + b"1,a,x\n" * 100)
    msg = str(info.value)
    assert "CROWDLAB_MAX_FILE_MB" in msg and "crowdlab_max_file_mb" not in msg and "Split it. To raise" in msg, msg
    assert np.isfinite(limits.get_limits().max_file_mb)


# ---------------------------------------------------------------------------- §6: a bare CR in a cell
def _cr_frame():
    import pandas as pd

    return pd.DataFrame(
        {"item": ["w1\r=1+1", "i2", "line\nbreak"], "worker\r@x": ["a", "+b", "c\r\n-d"], "n": [1, 2, 3]}
    )


def _cr_reader_rows(text: str) -> list[list[str]]:
    """What a reader that ends a line at a bare CR sees (Python's csv module, newline='')."""
    import csv
    import io

    return list(csv.reader(io.StringIO(text, newline="")))


def _check_cr_safe(text: str, frame) -> None:
    from crowdlab.io import safe

    rows = _cr_reader_rows(text)
    assert len(rows) == len(frame) + 1 and all(len(r) == frame.shape[1] for r in rows), rows
    for row in rows:
        for cell in row:  # no cell a spreadsheet runs: every one that starts like a formula is escaped
            assert not cell.startswith(safe.FORMULA_START) or safe._PLAIN_NUMBER.match(cell), cell
    assert rows[1][0] == "w1\r=1+1" and rows[3][1] == "c\r\n-d"  # kept whole, in one cell
    assert rows[0][1] == "worker\r@x" and rows[2][1] == "'+b"


def test_csv_bytes_quotes_every_cell_with_a_carriage_return():
    """Issue 42 §6: pandas quotes LF, not a bare CR, so "w1\\r=1+1" went out unquoted and a CR-splitting reader
    began a new row with =1+1."""
    from crowdlab.analysis.export import csv_bytes
    from crowdlab.io import safe

    frame = _cr_frame()
    _check_cr_safe(csv_bytes(frame).decode(), frame)
    _check_cr_safe(safe.csv_bytes(frame).decode(), frame)
    import pandas as pd

    back = pd.read_csv(__import__("io").BytesIO(csv_bytes(frame)), dtype=str, keep_default_na=False)
    assert list(back["item"]) == ["w1\r=1+1", "i2", "line\nbreak"]
    plain = pd.DataFrame({"item": ["a", "b"], "n": [1, 2]})
    assert csv_bytes(plain) == b"item,n\na,1\nb,2\n"  # a table without CR is written as before (LF)


def test_the_cli_output_files_quote_a_carriage_return(tmp_path):
    """The CLI's posteriors.csv, labels.csv and workers.csv of a file whose names hold a bare CR."""
    from crowdlab.cli import main

    src = tmp_path / "labels.csv"
    rows = "".join(f'"w1\r=1+1{i}","wk\r=2+2{m}",{(i + m) % 2}\n' for i in range(6) for m in range(3))
    src.write_bytes(("item,worker,label\n" + rows).encode())
    out = tmp_path / "out"
    assert main(["fit", str(src), "--method", "ds", "--out", str(out)]) == 0
    for name in ("posteriors.csv", "labels.csv", "workers.csv"):
        text = (out / name).read_bytes().decode()
        rows = _cr_reader_rows(text)
        assert all(not c.startswith("=") for r in rows for c in r), (name, rows[:3])
        assert any("w1\r=1+1" in c or "wk\r=2+2" in c for r in rows for c in r), (name, rows[:3])


# ---------------------------------------------------------------------------- §4: Parquet in memory
def _parquet_cases(folder):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from crowdlab.io.samples import sample_paths

    good = folder / "birds.parquet"
    pd.read_csv(sample_paths("bluebirds")[0]).to_parquet(good)
    raw = good.read_bytes()
    (folder / "cut.parquet").write_bytes(raw[: len(raw) // 2])
    pq.write_table(
        pa.table({"item": ["1", "2"], "worker": [["a"], ["b"]], "label": ["x", "y"]}), folder / "nest.parquet"
    )
    dup = pa.table([pa.array(["1", "2"]), pa.array(["a", "b"]), pa.array(["x", "y"])], names=["item", "item", "label"])
    pq.write_table(dup, folder / "dup.parquet")
    latin = pa.table({"item": ["1", "2"], "worker": ["a", "b"], "label": pa.array([b"x", b"\xffy"], pa.binary())})
    pq.write_table(latin, folder / "latin.parquet")
    return good


def test_read_annotations_reads_parquet_as_the_csv(tmp_path):
    """Issue 42 §4: the in-memory reader (read_annotations, crowdlab fit FILE, the upload) reads Parquet too."""
    import crowdlab as cl
    from crowdlab.io.samples import sample_paths

    good = _parquet_cases(tmp_path)
    csv, pq = cl.read_annotations(sample_paths("bluebirds")[0]), cl.read_annotations(good)
    assert (pq.n_items, pq.n_workers, pq.n_obs) == (csv.n_items, csv.n_workers, csv.n_obs) == (108, 39, 4212)
    np.testing.assert_allclose(cl.fit(pq, "ds").posterior, cl.fit(csv, "ds").posterior, rtol=0, atol=1e-12)
    upload = cl.read_annotations(good.read_bytes())  # an upload's bytes
    assert upload.n_obs == 4212


@pytest.mark.parametrize(
    "name, words",
    [
        ("cut.parquet", "truncated or corrupt"),
        ("nest.parquet", "nested values"),
        ("dup.parquet", "more than one column is named 'item'"),
        ("latin.parquet", "not UTF-8"),
    ],
)
def test_a_bad_parquet_file_is_refused_in_memory_as_the_stream_refuses_it(tmp_path, name, words):
    import crowdlab as cl
    from crowdlab.engines.stream import fit_file
    from crowdlab.errors import DataError

    _parquet_cases(tmp_path)
    with pytest.raises(DataError) as mem:
        cl.read_annotations(tmp_path / name)
    with pytest.raises(DataError) as streamed:
        fit_file(tmp_path / name, "ds")
    assert words in str(mem.value) and str(mem.value) == str(streamed.value)


def test_crowdlab_fit_reads_parquet_without_stream(tmp_path):
    from crowdlab.cli import main

    good = _parquet_cases(tmp_path)
    assert main(["fit", str(good), "--method", "ds", "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "labels.csv").read_text().count("\n") == 109


# ---------------------------------------------------------------------------- §7: small doors
@pytest.mark.parametrize("spelled", ["inf", "-inf", "Infinity", "+INF"])
def test_an_infinite_label_among_numbers_is_refused_in_memory_and_by_the_stream(tmp_path, spelled):
    """Issue 42 §7: a label `inf` was read as one more class."""
    import crowdlab as cl
    from crowdlab.engines.stream import fit_file
    from crowdlab.errors import DataError

    f = tmp_path / "inf.csv"
    f.write_text(f"item,worker,label\n1,a,0\n1,b,{spelled}\n2,a,1\n2,b,1\n3,a,0\n3,b,0\n")
    with pytest.raises(DataError, match=r"row 3, column 'label': 1 row has an infinite number as a label"):
        cl.read_annotations(f)
    with pytest.raises(DataError, match="infinite number"):
        fit_file(f, "ds")
    words = tmp_path / "words.csv"  # among words, inf is a word
    words.write_text("item,worker,label\n1,a,cat\n1,b,inf\n2,a,dog\n2,b,cat\n")
    assert list(cl.read_annotations(words).class_names) == ["cat", "dog", "inf"]


@pytest.fixture
def birds(tmp_path):
    import shutil

    from crowdlab.io.samples import sample_paths

    path = tmp_path / "birds.csv"
    shutil.copy(sample_paths("bluebirds")[0], path)
    return path


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    "text, words",
    [
        ("item,label\n", "gives no item a class"),
        ("item,label\n11573,\n", "gives no item a class"),
        ("item\n1\n", "a known-labels file needs item and label columns"),
        ("item,worker,label\n11573,3,1\n", "not a known-labels file"),
    ],
)
def test_known_files_are_refused_in_their_own_words(birds, tmp_path, capsys, stream, text, words):
    """Issue 42 §7: --known errors said 'gold file'; a header-only --known file was accepted silently."""
    from crowdlab.cli import main

    known = tmp_path / "known.csv"
    known.write_text(text)
    args = ["fit", str(birds), "--method", "ds", "--known", str(known), "--out", str(tmp_path / "out")]
    assert main(args + (["--stream"] if stream else [])) != 0
    err = capsys.readouterr().err
    assert words in err and "gold" not in err.lower(), err


def test_a_known_item_without_labels_is_said_of_the_known_labels_file(birds, tmp_path, capsys):
    from crowdlab.cli import main

    known = tmp_path / "known.csv"
    known.write_text("item,label\nnosuch,1\n")
    assert main(["fit", str(birds), "--known", str(known), "--out", str(tmp_path / "out")]) != 0
    err = capsys.readouterr().err
    assert "in the known-labels file has no labels" in err and "gold" not in err.lower(), err
