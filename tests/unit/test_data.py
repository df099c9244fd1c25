"""Readers in crowdlab.io.data: formats, aliases, gold, real datasets and the round trip back to a frame."""

from __future__ import annotations

import io
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowdlab.io.data import (
    Annotations,
    read_annotations,
    read_gold,
    read_long_csv,
    read_wide_csv,
    to_gold_dataframe,
    to_long_dataframe,
)

REPO = Path(__file__).parents[2]
DATA = REPO / "tests" / "data"
DATASET_ROOTS = (REPO.parent / "shared" / "datasets", REPO / "sample_data")


def dataset(name: str) -> Path:
    """Folder of a real dataset: shared/datasets when present, else the copy in sample_data, else skip."""
    for root in DATASET_ROOTS:
        if (root / name / "labels.csv").is_file():
            return root / name
    pytest.skip(f"dataset {name} is not available (needs shared/datasets beside the repo)")


def same_codes(a: Annotations, b: Annotations) -> None:
    """Assert two Annotations hold the same observations with the same codes and names."""
    assert a.item_names == b.item_names
    assert a.worker_names == b.worker_names
    assert a.class_names == b.class_names
    np.testing.assert_array_equal(a.item, b.item)
    np.testing.assert_array_equal(a.worker, b.worker)
    if a.is_continuous:
        np.testing.assert_array_equal(a.value, b.value)
    else:
        np.testing.assert_array_equal(a.label, b.label)


@pytest.fixture
def small() -> Annotations:
    return read_annotations(DATA / "small_long.csv")


# ---------------------------------------------------------------------- formats
def test_small_long_file_codes_and_numeric_class_order(small: Annotations) -> None:
    assert (small.n_items, small.n_workers, small.n_obs) == (4, 3, 9)
    assert small.item_names == ("1", "2", "3", "4")
    assert small.worker_names == ("a", "b", "c")
    assert small.class_names == ("1", "2", "10")  # numbers sort numerically, not as text
    np.testing.assert_array_equal(small.label, [0, 1, 1, 1, 2, 2, 2, 0, 1])
    assert small.gold is None
    assert small.notes == ()
    assert small.name == "small_long"


def test_wide_file_gives_the_same_codes_as_long(small: Annotations) -> None:
    wide = read_annotations(DATA / "small_wide.csv")
    same_codes(small, wide)
    assert any("wide table" in note for note in wide.notes)
    same_codes(small, read_wide_csv(DATA / "small_wide.csv"))
    same_codes(small, read_annotations(DATA / "small_wide.csv", fmt="wide"))


@pytest.mark.parametrize(
    "file",
    ["small_long_semicolon.csv", "small_long_tab.tsv", "small_long_bom.csv", "small_long_utf16.txt"],
)
def test_delimiters_and_encodings_read_alike(small: Annotations, file: str) -> None:
    same_codes(small, read_annotations(DATA / file))


def test_read_long_csv_directly(small: Annotations) -> None:
    same_codes(small, read_long_csv(DATA / "small_long.csv"))
    same_codes(small, read_annotations(DATA / "small_long.csv", fmt="long"))


def test_aliases_string_labels_and_messy_header() -> None:
    ann = read_annotations(DATA / "aliases_strings.csv")  # "Task ID , Annotator,ANSWER"
    assert ann.class_names == ("G", "P", "R", "X")
    assert ann.item_names == ("site1", "site2", "site3")
    assert ann.worker_names == ("w1", "w2", "w3")
    assert to_long_dataframe(ann)["label"].tolist() == ["G", "P", "X", "R", "G", "G"]


@pytest.mark.parametrize(
    ("item", "worker", "label"),
    [("task", "annotator", "answer"), ("question", "rater", "response"), ("Item_ID", "labeller", "Class")],
)
def test_column_aliases(item: str, worker: str, label: str) -> None:
    text = f"{item},{worker},{label}\nq1,u1,yes\nq1,u2,no\nq2,u1,no\n"
    ann = read_annotations(text.encode())
    assert (ann.n_items, ann.n_workers, ann.class_names) == (2, 2, ("no", "yes"))


def test_spaces_around_cells_are_stripped() -> None:
    ann = read_annotations(b"item , worker , label\n 1 , a , x \n1,b,y\n")
    assert ann.item_names == ("1",)
    assert ann.worker_names == ("a", "b")
    assert ann.class_names == ("x", "y")


def test_numbers_written_two_ways_are_one_class() -> None:
    ann = read_annotations(b"item,worker,label\n1,a,1\n1,b,1.0\n2,a,0\n")
    assert ann.class_names == ("0", "1")
    np.testing.assert_array_equal(ann.label, [1, 1, 0])


def test_blank_rows_are_skipped_and_counted() -> None:
    ann = read_annotations(DATA / "blank_rows.csv")
    assert ann.n_obs == 4
    assert ann.notes == ("Skipped 3 empty rows (rows 3, 5, 7).",)


def test_extra_columns_are_ignored_with_a_note() -> None:
    ann = read_annotations(b"item,worker,label,time\n1,a,x,9\n1,b,y,10\n")
    assert ann.n_obs == 2
    assert ann.notes == ("Ignored 1 column: 'time'.",)


def test_repeated_pairs_are_kept() -> None:
    ann = read_annotations(dataset("dawid_skene1979_patients") / "labels.csv")
    assert (ann.n_obs, ann.n_items, ann.n_workers, ann.n_classes) == (315, 45, 5, 4)
    pairs = ann.item.astype(np.int64) * ann.n_workers + ann.worker
    assert np.unique(pairs).size < ann.n_obs
    assert ann.name == "dawid_skene1979_patients"


# ---------------------------------------------------------------------- continuous scores
def test_score_column_reads_as_continuous() -> None:
    ann = read_annotations(b"item,worker,score\n1,a,0.5\n1,b,2\n2,a,-1e-1\n")
    assert ann.is_continuous
    assert ann.label is None and ann.class_names == ()
    np.testing.assert_allclose(ann.value, [0.5, 2.0, -0.1])


def test_kind_continuous_on_a_label_column_and_custom_score_column() -> None:
    ann = read_annotations(b"item,worker,label\n1,a,3\n1,b,4\n", kind="continuous")
    np.testing.assert_allclose(ann.value, [3.0, 4.0])
    ann = read_annotations(b"item,worker,intensity\n1,a,3\n1,b,4\n", score_column="Intensity")
    assert ann.is_continuous
    np.testing.assert_allclose(ann.value, [3.0, 4.0])


def test_decimal_comma_in_semicolon_files() -> None:
    ann = read_annotations(DATA / "continuous_decimal_comma.csv")
    np.testing.assert_allclose(ann.value, [0.5, 1.25, 3.0])


def test_wide_continuous() -> None:
    ann = read_annotations(b"item,w1,w2\n1,0.5,\n2,1.5,2\n", fmt="wide", kind="continuous")
    np.testing.assert_allclose(ann.value, [0.5, 1.5, 2.0])
    assert ann.worker_names == ("w1", "w2")


# ---------------------------------------------------------------------- gold
def test_partial_gold_file(small: Annotations) -> None:
    ann = read_annotations(DATA / "small_long.csv", gold=DATA / "small_gold.csv")
    np.testing.assert_array_equal(ann.gold, [0, -1, 2, -1])
    same_codes(small, ann)
    assert to_gold_dataframe(ann).to_dict("list") == {"item": ["1", "3"], "label": ["1", "10"]}


def test_read_gold_returns_a_new_object(small: Annotations) -> None:
    with_gold = read_gold(DATA / "small_gold.csv", small)
    assert small.gold is None
    assert with_gold.has_gold and int(with_gold.gold_mask.sum()) == 2


def test_gold_class_nobody_used_is_added_in_order(small: Annotations) -> None:
    ann = read_gold(DATA / "gold_new_class.csv", small)
    assert ann.class_names == ("1", "2", "5", "10")
    np.testing.assert_array_equal(ann.gold, [0, 2, -1, -1])
    assert to_long_dataframe(ann).equals(to_long_dataframe(small))  # same labels, renumbered codes
    assert "added to the classes" in ann.notes[-1]


def test_gold_column_in_a_long_file() -> None:
    ann = read_annotations(DATA / "long_gold_column.csv")
    assert ann.class_names == ("x", "y")
    np.testing.assert_array_equal(ann.gold, [0, -1, 1])


def test_gold_column_in_a_wide_file() -> None:
    ann = read_annotations(DATA / "wide_gold_column.csv")
    assert ann.worker_names == ("w1", "w2", "w3")  # the gold column is not a worker
    assert ann.item_names == ("q1", "q2", "q4")  # q3 has no labels: skipped, with a note
    np.testing.assert_array_equal(ann.gold, [0, -1, 1])
    assert ann.n_obs == 7  # blank and NA cells are missing labels
    assert ann.notes[0] == "Skipped 1 row with no labels (row 4)."


def test_gold_file_replaces_a_gold_column() -> None:
    ann = read_annotations(DATA / "long_gold_column.csv", gold=b"item,truth\n2,x\n")
    np.testing.assert_array_equal(ann.gold, [-1, 0, -1])
    assert any("replaces" in note for note in ann.notes)


def test_header_only_gold_attaches_nothing_and_says_so(small: Annotations) -> None:
    ann = read_gold(b"item,label\n", small)
    assert ann.gold is None and not ann.has_gold
    assert ann.notes == ("Gold file 'uploaded file' has no rows; no gold attached.",)


def test_blank_gold_cells_are_unknown(small: Annotations) -> None:
    ann = read_gold(b"item,label\n1,2\n2,\n", small)
    np.testing.assert_array_equal(ann.gold, [1, -1, -1, -1])
    assert ann.notes == ("1 gold row with a blank label read as unknown.",)


def test_gold_numbers_match_numerically(small: Annotations) -> None:
    ann = read_gold(b"item,gold_label\n2,10.0\n", small)
    np.testing.assert_array_equal(ann.gold, [-1, 2, -1, -1])


def test_continuous_gold_is_float() -> None:
    ann = read_annotations(b"item,worker,score\n1,a,1\n2,a,2\n", gold=b"item,truth\n2,1.5\n")
    np.testing.assert_array_equal(ann.gold, [np.nan, 1.5])
    assert to_gold_dataframe(ann).to_dict("list") == {"item": ["2"], "label": [1.5]}


# ---------------------------------------------------------------------- sources and names
def test_sources_path_str_bytes_and_file_likes(small: Annotations) -> None:
    path = DATA / "small_long.csv"
    data = path.read_bytes()
    buffer = io.BytesIO(data)
    buffer.name = "my labels.csv"
    for source in (str(path), path, data, buffer, _Upload("upload.csv", data), _Reader(data)):
        same_codes(small, read_annotations(source))
    assert read_annotations(data).name == "uploaded file"
    assert read_annotations(buffer).name == "my labels"
    assert read_annotations(_Upload("upload.csv", data), name="Mine").name == "Mine"


class _Upload:
    """What Streamlit's file_uploader hands over: a name and getvalue()."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self._data = name, data

    def getvalue(self) -> bytes:
        return self._data


class _Reader:
    """A nameless binary stream with only read()."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self) -> bytes:
        return self._data


# ---------------------------------------------------------------------- round trip to frames
def test_to_long_dataframe_round_trip(small: Annotations) -> None:
    frame = to_long_dataframe(small)
    assert list(frame.columns) == ["item", "worker", "label"]
    assert frame.iloc[4].tolist() == ["2", "c", "10"]
    same_codes(small, read_annotations(frame.to_csv(index=False).encode()))


def test_to_long_dataframe_continuous_round_trip() -> None:
    ann = read_annotations(b"item,worker,rating\nx,a,0.25\ny,b,3\n")
    frame = to_long_dataframe(ann)
    assert list(frame.columns) == ["item", "worker", "value"]
    same_codes(ann, read_annotations(frame.to_csv(index=False).encode()))


# ---------------------------------------------------------------------- real datasets
def test_bluebirds_with_gold() -> None:
    folder = dataset("welinder2010_bluebirds")
    ann = read_annotations(folder / "labels.csv", gold=folder / "gold.csv")
    assert (ann.n_items, ann.n_workers, ann.n_obs, ann.n_classes) == (108, 39, 4212, 2)
    assert int(ann.gold_mask.sum()) == 108
    assert ann.name == "welinder2010_bluebirds"


def test_affect_as_continuous_with_float_gold() -> None:
    folder = dataset("snow2008_affect")
    ann = read_annotations(folder / "labels.csv", gold=folder / "gold.csv", kind="continuous")
    assert ann.is_continuous
    assert (ann.n_items, ann.value.size) == (700, 7000)
    assert ann.gold.dtype == np.float64 and np.isfinite(ann.gold).all()


def test_adultcontent_string_labels_partial_gold() -> None:
    folder = dataset("ipeirotis_adultcontent")
    ann = read_annotations(folder / "labels.csv", gold=folder / "gold.csv")
    assert ann.class_names == ("G", "P", "R", "X")
    assert (ann.n_items, ann.n_workers, ann.n_obs) == (11040, 825, 92721)
    assert int(ann.gold_mask.sum()) == 333
    gold = pd.read_csv(folder / "gold.csv", dtype=str)
    first = ann.item_names.index(gold["item"][0])
    assert ann.class_names[ann.gold[first]] == gold["label"][0]


def test_dawid_skene_header_only_gold_is_not_an_error() -> None:
    folder = dataset("dawid_skene1979_patients")
    ann = read_annotations(folder / "labels.csv", gold=folder / "gold.csv")
    assert not ann.has_gold
    assert "no gold attached" in ann.notes[-1]


# ---------------------------------------------------------------------- size
@pytest.mark.slow
def test_a_million_rows_read_quickly() -> None:
    rng = np.random.default_rng(0)
    n = 1_000_000
    frame = pd.DataFrame(
        {
            "item": np.char.add("i", rng.integers(0, 100_000, n).astype(str)),
            "worker": np.char.add("w", rng.integers(0, 2_000, n).astype(str)),
            "label": rng.integers(0, 4, n),
        }
    )
    data = frame.to_csv(index=False).encode()
    start = time.process_time()
    ann = read_annotations(data)
    elapsed = time.process_time() - start
    assert ann.n_obs == n and ann.n_classes == 4
    np.testing.assert_array_equal(ann.label, frame["label"].to_numpy())
    assert elapsed < 10.0  # about 1.5 s on a laptop; generous for CI
