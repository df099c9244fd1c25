"""A file is read as what it is: long vs wide from the names in row 1 and from the data's shape (issue 30).

The bluebirds labels (Welinder et al. 2010: 4,212 labels, 108 items, 39 workers, 2 classes) under headers that
match none of the accepted names must still be read long; a wide file (one row per item) must stay wide, also with
only two workers (three columns); when neither the names nor the shape decide, the reader asks for the columns.
"""

from __future__ import annotations

import pandas as pd
import pytest

from crowdlab.cli import main
from crowdlab.errors import DataError
from crowdlab.io.data import ColumnsUnclear, read_annotations

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
BIRDS = ROOT / "sample_data" / "welinder2010_bluebirds" / "labels.csv"


@pytest.fixture(scope="module")
def birds() -> pd.DataFrame:
    return pd.read_csv(BIRDS, dtype=str)


def _csv(df: pd.DataFrame, names) -> bytes:
    return df.set_axis(list(names), axis=1).to_csv(index=False).encode()


@pytest.mark.parametrize("kind", ["auto", "classes"])
@pytest.mark.parametrize("names", [("q", "w", "a"), ("id", "annotator_name", "label_value")])
def test_a_long_file_with_unknown_names_is_read_long(birds, names, kind):
    data = read_annotations(_csv(birds, names), kind=kind)
    assert (data.n_items, data.n_workers, data.n_obs, data.n_classes) == (108, 39, 4212, 2)
    note = next(n for n in data.notes if n.startswith("Read as a long table"))
    assert "108 distinct ids" in note and f"{names[1]!r} as the worker" in note and f"{names[2]!r} as the label" in note


def test_the_long_reading_by_position_says_how_to_name_the_columns(birds):
    data = read_annotations(_csv(birds, ("q", "w", "a")), where="cli")
    assert any("in the order item, worker, label" in n and "--columns" in n for n in data.notes)


def test_a_true_wide_file_is_read_wide(birds):
    wide = birds.pivot(index="item", columns="worker", values="label").reset_index()
    data = read_annotations(wide.to_csv(index=False).encode())
    assert (data.n_items, data.n_workers, data.n_obs) == (108, 39, 4212)
    assert any("Read as a wide table" in n and "every id is on one row" in n for n in data.notes)


@pytest.mark.parametrize("first", ["item", "photo"])
def test_a_three_column_wide_file_of_two_workers_is_read_wide(birds, first):
    wide = birds.pivot(index="item", columns="worker", values="label").reset_index().iloc[:, :3]
    wide.columns = [first, "alice", "bob"]
    data = read_annotations(wide.to_csv(index=False).encode(), kind="classes")
    assert (data.n_items, data.n_workers) == (108, 2) and data.worker_names == ("alice", "bob")


def test_columns_name_the_roles_in_any_order(birds):
    raw = _csv(birds[["label", "worker", "item"]], ("x", "y", "z"))
    data = read_annotations(raw, columns="z,y,x")
    assert (data.n_items, data.n_workers, data.n_classes) == (108, 39, 2)
    assert any("as you named them" in n for n in data.notes)
    assert read_annotations(raw, columns=(2, 1, 0)).n_items == 108
    with pytest.raises(DataError, match="no column named 'nope'"):
        read_annotations(raw, columns=("z", "y", "nope"))


def test_columns_that_cannot_be_told_apart_are_asked_for_not_guessed():
    # three columns, repeated ids, but blank cells: a long file has none, a wide one has them
    raw = b"a,b,c\n1,x,\n1,y,x\n2,x,y\n2,,x\n"
    for where, spelled in (("python", "columns="), ("cli", "--columns"), ("app", "column picker")):
        with pytest.raises(ColumnsUnclear) as info:
            read_annotations(raw, where=where)
        assert spelled in info.value.hint and info.value.header == ("a", "b", "c")
    # more than three unnamed columns with every id on several rows
    many = b"a,b,c,d\n" + b"".join(f"{i % 5},{i},x,{i % 3}\n".encode() for i in range(30))
    with pytest.raises(ColumnsUnclear, match="4 columns"):
        read_annotations(many)
    assert read_annotations(many, fmt="wide").n_items == 5  # the user's choice is read


def test_a_wide_reading_asked_for_against_a_long_shape_says_so(birds):
    data = read_annotations(_csv(birds, ("q", "w", "a")), fmt="wide", kind="classes")
    assert any(n.startswith("Read as a wide table as asked, although the file looks long") for n in data.notes)


def test_cli_columns_and_kind_classes_cannot_force_the_wide_reading(birds, tmp_path, capsys):
    f = tmp_path / "qwa.csv"
    f.write_bytes(_csv(birds, ("q", "w", "a")))
    assert main(["fit", str(f), "--kind", "classes", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "108 items, 39 workers, 4,212 labels, 2 classes" in out and "Read as a long table" in out
    g = tmp_path / "swapped.csv"
    g.write_bytes(_csv(birds[["worker", "item", "label"]], ("u", "v", "t")))
    assert main(["fit", str(g), "--columns", "v,u,t", "--out", str(tmp_path / "p")]) == 0
    assert "108 items, 39 workers" in capsys.readouterr().out


def test_columns_misused_is_a_one_line_error_in_the_users_spelling(birds, tmp_path, capsys):
    f = tmp_path / "qwa.csv"
    f.write_bytes(_csv(birds, ("q", "w", "a")))
    assert main(["fit", str(f), "--columns", "q,w", "--out", str(tmp_path / "o")]) == 2
    assert "--columns q,w names 2 columns" in capsys.readouterr().err
    assert main(["fit", str(f), "--columns", "q,w,a", "--format", "wide", "--out", str(tmp_path / "o")]) == 2
    assert "--format wide" in capsys.readouterr().err
    with pytest.raises(DataError, match="names 2 columns"):
        read_annotations(f, columns=["q", "w"])
